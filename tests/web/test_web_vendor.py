"""How app/web_ui.py serves the page's libraries from node_modules, without a browser: only the
folders VENDOR_DIRS names, under the page's headers; a checkout without node_modules still starts
and answers 404 for them (the Markdown view then says what is missing)."""
from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.web_ui import SECURITY_HEADERS, VENDOR_DIRS, WEB_DIR, mount_web_ui


def client_with(node_modules) -> TestClient:
    app = FastAPI()
    mount_web_ui(app, WEB_DIR, node_modules)
    return TestClient(app)


def test_named_library_folders_are_served_and_nothing_else(tmp_path):
    for folder in VENDOR_DIRS.values():
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "katex/dist/katex.mjs").write_text("export default {};")
    (tmp_path / "katex/package.json").write_text("{}")
    (tmp_path / "axe-core").mkdir()
    (tmp_path / "axe-core/axe.min.js").write_text("")
    client = client_with(tmp_path)
    answer = client.get("/web/vendor/katex/katex.mjs")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/javascript")
    assert answer.headers["content-security-policy"] == SECURITY_HEADERS["Content-Security-Policy"]
    for path in ("/web/vendor/katex/../package.json", "/web/vendor/katex/%2e%2e/package.json",
                 "/web/vendor/axe-core/axe.min.js", "/web/vendor/katex/missing.js"):
        assert client.get(path).status_code == 404, path
    assert client.get("/web/app.js").status_code == 200   # the page's own files, as before


def test_without_node_modules_the_page_starts_and_the_libraries_are_missing(tmp_path):
    client = client_with(tmp_path / "no-node-modules")
    assert client.get("/").status_code == 200
    answer = client.get("/web/vendor/markdown-it/markdown-it.esm.min.mjs")
    assert answer.status_code == 404
    assert answer.headers["content-security-policy"] == SECURITY_HEADERS["Content-Security-Policy"]
