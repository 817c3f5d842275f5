"""The API's documentation pages: Swagger UI at `/docs`, ReDoc at `/redoc`, served only
when OCRSERVE_API_DOCS is on. `/openapi.json` is served either way.

They run on the origin where the web page keeps its key (in sessionStorage), so any script
they run could read it. When on, each page loads one exact version of its files from the
CDN, each checked against its Subresource Integrity hash, runs no inline script (Swagger
UI's start-up is `/docs/swagger-ui-init.js`, from this origin), and answers with the web
page's security headers (`app/web_ui.py`: nosniff, no referrer, no caching) under a CSP
that allows those files alone and no framing. Swagger UI's OAuth2 redirect page is never
served: the API takes keys, not OAuth2.
"""
from __future__ import annotations

import html

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response

from app.web_ui import SECURITY_HEADERS

SWAGGER_UI_JS = "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5.36.0/swagger-ui-bundle.js"
SWAGGER_UI_JS_SRI = "sha384-fUpRgC19yPykTqzdrUbdAg8NTiu16NEKf9U12J+IJWCg8/1mEI8f2+PEIz60Wyd+"
SWAGGER_UI_CSS = "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5.36.0/swagger-ui.css"
SWAGGER_UI_CSS_SRI = "sha384-z/AtSaOHGn5MJ5auAHXUypohywlIWLBZo1jeGmhdpVIbCnFhxAH92cwdV41oyINc"
REDOC_JS = "https://cdn.jsdelivr.net/npm/redoc@2.5.4/bundles/redoc.standalone.js"
REDOC_JS_SRI = "sha384-w447zOpYfw/1Tv/5AK9NfHTlQIqE3RVR6KY62jCyy9zNDgO64cMwGGP1Fj0zJVf5"
SWAGGER_UI_INIT_PATH = "/docs/swagger-ui-init.js"

_NEVER = "default-src 'none'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
SWAGGER_UI_CSP = (f"{_NEVER}; script-src 'self' {SWAGGER_UI_JS}; style-src {SWAGGER_UI_CSS}; "
                  "img-src 'self' data:; connect-src 'self'")
# ReDoc styles itself with <style> elements it writes (styled-components) and searches in a blob: worker.
REDOC_CSP = f"{_NEVER}; script-src {REDOC_JS}; style-src 'unsafe-inline'; img-src 'self' data:; " \
            "connect-src 'self'; worker-src blob:"


def page_headers(content_security_policy: str) -> dict[str, str]:
    return {**SECURITY_HEADERS, "Content-Security-Policy": content_security_policy}


def mount_api_docs(app: FastAPI) -> None:
    """Adds /docs, its start-up script and /redoc to `app`, which must have been made with
    `docs_url=None, redoc_url=None` (FastAPI's own pages load unpinned CDN files)."""

    def openapi_url(request: Request) -> str:
        return html.escape(request.scope.get("root_path", "") + (app.openapi_url or ""))

    @app.get("/docs", include_in_schema=False)
    def swagger_ui(request: Request) -> HTMLResponse:
        init = html.escape(request.scope.get("root_path", "") + SWAGGER_UI_INIT_PATH)
        return HTMLResponse(f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{app.title} - Swagger UI</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{SWAGGER_UI_CSS}" integrity="{SWAGGER_UI_CSS_SRI}" crossorigin="anonymous">
</head>
<body>
<div id="swagger-ui" data-openapi-url="{openapi_url(request)}"></div>
<script src="{SWAGGER_UI_JS}" integrity="{SWAGGER_UI_JS_SRI}" crossorigin="anonymous"></script>
<script src="{init}"></script>
</body>
</html>
""", headers=page_headers(SWAGGER_UI_CSP))

    @app.get(SWAGGER_UI_INIT_PATH, include_in_schema=False)
    def swagger_ui_init() -> Response:
        # FastAPI's settings for Swagger UI, with no validator badge (it would send the spec's URL away).
        script = """window.ui = SwaggerUIBundle({
  url: document.getElementById("swagger-ui").dataset.openapiUrl,
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
"""
        return Response(script, media_type="text/javascript; charset=utf-8", headers=page_headers(SWAGGER_UI_CSP))

    @app.get("/redoc", include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        return HTMLResponse(f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{app.title} - ReDoc</title>
<link rel="icon" href="data:,">
<style>body {{ margin: 0; padding: 0; }}</style>
</head>
<body>
<redoc spec-url="{openapi_url(request)}"></redoc>
<script src="{REDOC_JS}" integrity="{REDOC_JS_SRI}" crossorigin="anonymous"></script>
</body>
</html>
""", headers=page_headers(REDOC_CSP))
