"""Against the API as `ocrserve api` runs it (its own process, bound to 127.0.0.1): a request
naming another host (DNS rebinding) is refused, and every page route carries the page's
security headers, `/web/` included."""
from __future__ import annotations

import httpx
import pytest

from app.web_ui import SECURITY_HEADERS
from web_harness import KEY

pytestmark = pytest.mark.slow


def test_the_running_api_refuses_a_rebound_host(api):
    port = api.base_url.rsplit(":", 1)[1]
    for host in ("attacker.example", f"attacker.example:{port}", "127.0.0.1.attacker.example"):
        for path in ("/", "/v1/jobs", "/web/app.js"):
            answer = httpx.get(f"{api.base_url}{path}", headers={"Host": host, "Authorization": f"Bearer {KEY}"},
                               timeout=10)
            assert answer.status_code == 400 and answer.json()["error"]["code"] == "host_not_allowed", (host, path)
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
        answer = httpx.get(f"{api.base_url}/v1/jobs", headers={"Host": host, "Authorization": f"Bearer {KEY}"},
                           timeout=10)
        assert answer.status_code == 200, (host, answer.text)


@pytest.mark.parametrize("path", ["/", "/web/index.html", "/web/app.js", "/web/missing.js"])
def test_the_running_api_sends_the_policy_on_every_page_route(api, path):
    answer = httpx.get(f"{api.base_url}{path}", timeout=10)
    for name, value in SECURITY_HEADERS.items():
        assert answer.headers.get(name) == value, (path, name)
