"""The browser UI: the static files in `web/`, served by the API itself.

`/` answers with `web/index.html`; its script and style sheet come from
`/web/...`. Same origin as the API, so the page needs no CORS, and it talks to
the service only through the public HTTP API, with the key the user typed.

Nothing is mounted at `/`, so the UI can never shadow an API route, whatever
order routers are added in. Every answer on a page route (`/` and everything
under `/web/`, the index served there too and any error) carries a
Content-Security-Policy that allows only this origin's scripts and styles (and
blob: images, which is how the page shows images fetched with the key), so
result text a document smuggles in cannot run even if some code path forgot to
escape it, plus the other headers in SECURITY_HEADERS.

The page's third-party libraries (markdown-it, DOMPurify, KaTeX with its fonts) are
served from `node_modules/`, where scripts/setup.sh installs the versions that
package-lock.json pins (`npm ci`), under `/web/vendor/NAME/`: only the folders named
in VENDOR_DIRS, never node_modules as a whole. Without them the page still works;
its Markdown view says what is missing.
"""
from __future__ import annotations

import mimetypes
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse
from starlette.staticfiles import StaticFiles

WEB_DIR = Path(__file__).resolve().parents[1] / "web"
NODE_MODULES = WEB_DIR.parent / "node_modules"
ASSETS_PREFIX = "/web"
VENDOR_PREFIX = ASSETS_PREFIX + "/vendor"
# /web/vendor/NAME/... -> the folder of node_modules that holds the library's browser build.
VENDOR_DIRS = {
    "markdown-it": "markdown-it/dist/browser",   # markdown-it.esm.min.mjs: one ES module, no imports
    "dompurify": "dompurify/dist",                # purify.es.mjs
    "katex": "katex/dist",                        # katex.mjs, katex.min.css and fonts/
}
# KaTeX's style sheet loads its fonts from this origin (font-src); it draws formulas into the DOM
# through element.style, which style-src does not govern, so no inline style is allowed.
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
                           "font-src 'self'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; "
                           "base-uri 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",   # revalidate, so an upgraded service is picked up at once
}


# Module scripts are refused unless served as JavaScript; not every system's table knows .mjs.
mimetypes.add_type("text/javascript", ".mjs")


def mount_web_ui(app: FastAPI, web_dir: Path = WEB_DIR, node_modules: Path = NODE_MODULES) -> None:
    index = web_dir / "index.html"
    assert index.is_file(), f"the web UI is missing: {index}"

    @app.get("/", include_in_schema=False)
    def web_index() -> FileResponse:
        return FileResponse(index, media_type="text/html; charset=utf-8")

    # Before /web: the first mount whose prefix matches answers. A library not installed is not
    # mounted, so its files answer 404 from /web.
    for name, folder in VENDOR_DIRS.items():
        if (node_modules / folder).is_dir():
            app.mount(f"{VENDOR_PREFIX}/{name}", StaticFiles(directory=node_modules / folder), name=f"web-vendor-{name}")
    app.mount(ASSETS_PREFIX, StaticFiles(directory=web_dir), name="web")
    app.add_middleware(PageSecurityHeaders)


def is_page_path(path: str) -> bool:
    return path == "/" or path == ASSETS_PREFIX or path.startswith(ASSETS_PREFIX + "/")


class PageSecurityHeaders:
    """Sets SECURITY_HEADERS on every response of a page route, whatever answered it (the index
    route, the static files, a 404 or 304), replacing any the handler set."""

    _names = {name.lower().encode() for name in SECURITY_HEADERS}
    _headers = [(name.lower().encode(), value.encode()) for name, value in SECURITY_HEADERS.items()]

    def __init__(self, app: Callable[..., Awaitable[None]]):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Awaitable[Any]],
                      send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        if scope["type"] != "http" or not is_page_path(scope.get("path", "")):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in self._names]
                message = {**message, "headers": kept + self._headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
