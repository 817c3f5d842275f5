"""The browser UI: the static files in `web/`, served by the API itself.

`/` answers with `web/index.html`; its script and style sheet come from
`/web/...`. Same origin as the API, so the page needs no CORS, and it talks to
the service only through the public HTTP API, with the key the user typed.

Nothing is mounted at `/`, so the UI can never shadow an API route, whatever
order routers are added in. The index carries a Content-Security-Policy that
allows only this origin's scripts and styles (and blob: images, which is how
the page shows images fetched with the key): result text a document smuggles
in cannot run even if some code path forgot to escape it.
"""
from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from starlette.staticfiles import StaticFiles

WEB_DIR = Path(__file__).resolve().parents[1] / "web"
ASSETS_PREFIX = "/web"
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
                           "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",   # revalidate, so an upgraded service is picked up at once
}


def mount_web_ui(app: FastAPI, web_dir: Path = WEB_DIR) -> None:
    index = web_dir / "index.html"
    assert index.is_file(), f"the web UI is missing: {index}"

    @app.get("/", include_in_schema=False)
    def web_index() -> FileResponse:
        return FileResponse(index, media_type="text/html; charset=utf-8", headers=SECURITY_HEADERS)

    app.mount(ASSETS_PREFIX, StaticFiles(directory=web_dir), name="web")
