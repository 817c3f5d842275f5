"""The HTTP side of the web page, against the running API: the UI is served
with a strict Content-Security-Policy, and the endpoints it needs beyond
/v1/jobs (limits, page images, deleting a finished job) keep to the key rules."""
from __future__ import annotations

import io
import time

import httpx
import pytest
from PIL import Image

import ocr_samples as samples
from web_harness import KEY, OTHER_KEY, UPLOAD_CAP_BYTES

pytestmark = pytest.mark.slow


def auth(key: str = KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def finished_job(api, worker) -> dict:
    answer = httpx.post(f"{api.base_url}/v1/jobs", headers=auth(), timeout=30,
                        files=[("files", ("one-page.pdf", samples.multi_page_pdf(1), "application/pdf"))],
                        data={"formats": "md,json"})
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        job = httpx.get(f"{api.base_url}/v1/jobs/{job_id}", headers=auth(), timeout=10).json()
        if job["state"] in ("done", "failed", "cancelled"):
            assert job["state"] == "done", job
            return job
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} did not finish")


def test_ui_is_served_with_its_assets_and_a_strict_policy(api):
    index = httpx.get(f"{api.base_url}/", timeout=10)
    assert index.status_code == 200 and index.headers["content-type"].startswith("text/html")
    policy = index.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy and "'unsafe-inline'" not in policy
    assert index.headers["x-content-type-options"] == "nosniff"
    assert "font-src 'self'" in policy   # KaTeX's fonts, from this origin only
    for asset, media in (("app.js", "javascript"), ("markdown_view.js", "javascript"), ("styles.css", "text/css"),
                         ("vendor/markdown-it/markdown-it.esm.min.mjs", "javascript"),
                         ("vendor/dompurify/purify.es.mjs", "javascript"), ("vendor/katex/katex.mjs", "javascript"),
                         ("vendor/katex/katex.min.css", "text/css"),
                         ("vendor/katex/fonts/KaTeX_Main-Regular.woff2", "font/woff2")):
        answer = httpx.get(f"{api.base_url}/web/{asset}", timeout=10)
        assert answer.status_code == 200 and media in answer.headers["content-type"], asset
        assert answer.headers["content-security-policy"] == policy, asset
    # Only the libraries' named folders are served, never node_modules as a whole.
    for path in ("vendor/axe-core/axe.min.js", "vendor/markdown-it/../package.json", "vendor/katex/../package.json",
                 "../node_modules/katex/package.json"):
        assert httpx.get(f"{api.base_url}/web/{path}", timeout=10).status_code == 404, path
    assert httpx.get(f"{api.base_url}/web/../app/main.py", timeout=10).status_code == 404
    # The UI shadows no API route, and the API keeps answering in JSON.
    missing = httpx.get(f"{api.base_url}/v1/no-such-route", headers=auth(), timeout=10)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "http_error"


def test_limits_need_a_key_and_report_the_settings(api):
    assert httpx.get(f"{api.base_url}/v1/limits", timeout=10).status_code == 401
    limits = httpx.get(f"{api.base_url}/v1/limits", headers=auth(), timeout=10).json()
    assert limits["max_upload_bytes"] == UPLOAD_CAP_BYTES
    assert limits["max_pages"] == 20 and limits["render_dpi"] == 100
    assert limits["formats"] == ["md", "json", "txt", "pdf", "hocr", "alto"]
    assert limits["default_formats"] == ["md", "json", "txt", "pdf"]
    assert limits["text_layer"] == "auto" and limits["text_layer_modes"] == ["auto", "never", "verify"]
    index = httpx.get(f"{api.base_url}/", timeout=10).text
    assert all(f'<option value="{mode}">' in index for mode in limits["text_layer_modes"]), "the page offers each"
    assert limits["file_types"] == ["pdf", "png", "jpeg", "tiff", "docx", "odt", "rtf", "pptx", "odp", "xlsx", "ods",
                                    "html", "epub"]
    assert {".tiff", ".docx", ".epub", ".html"} <= set(limits["file_extensions"])


def test_page_image_matches_the_result_geometry(api, finished_job):
    job_id = finished_job["id"]
    result = httpx.get(f"{api.base_url}/v1/jobs/{job_id}/result?format=json", headers=auth(), timeout=10).json()
    page = result["documents"][0]["pages"][0]
    answer = httpx.get(f"{api.base_url}/v1/jobs/{job_id}/pages/1/1/image", headers=auth(), timeout=30)
    assert answer.status_code == 200 and answer.headers["content-type"] == "image/png"
    image = Image.open(io.BytesIO(answer.content))
    assert (image.width, image.height) == (page["width"], page["height"])   # region boxes fall where they belong
    for path in ("pages/1/2/image", "pages/2/1/image", "pages/0/1/image"):
        assert httpx.get(f"{api.base_url}/v1/jobs/{job_id}/{path}", headers=auth(), timeout=10).status_code in (
            404, 400), path
    other = httpx.get(f"{api.base_url}/v1/jobs/{job_id}/pages/1/1/image", headers=auth(OTHER_KEY), timeout=10)
    assert other.status_code == 404


def test_delete_removes_only_a_finished_job_of_the_caller(api, finished_job, service_data_dir):
    job_id = finished_job["id"]
    assert httpx.delete(f"{api.base_url}/v1/jobs/{job_id}/record", headers=auth(OTHER_KEY), timeout=10).status_code == 404
    assert (service_data_dir / "results" / job_id).exists()
    answer = httpx.delete(f"{api.base_url}/v1/jobs/{job_id}/record", headers=auth(), timeout=10)
    assert answer.status_code == 204
    assert httpx.get(f"{api.base_url}/v1/jobs/{job_id}", headers=auth(), timeout=10).status_code == 404
    assert not (service_data_dir / "results" / job_id).exists() and not (service_data_dir / "uploads" / job_id).exists()
    listed = httpx.get(f"{api.base_url}/v1/jobs", headers=auth(), timeout=10).json()["jobs"]
    assert job_id not in {job["id"] for job in listed}


def test_delete_refuses_a_job_still_running(api):
    answer = httpx.post(f"{api.base_url}/v1/jobs", headers=auth(), timeout=30,
                        files=[("files", ("pending.pdf", samples.multi_page_pdf(6), "application/pdf"))])
    job_id = answer.json()["id"]
    refused = httpx.delete(f"{api.base_url}/v1/jobs/{job_id}/record", headers=auth(), timeout=10)
    assert refused.status_code == 409 and "cancel it before deleting it" in refused.json()["error"]["message"]
    assert httpx.delete(f"{api.base_url}/v1/jobs/{job_id}", headers=auth(), timeout=10).json()["state"] == "cancelled"
    assert httpx.delete(f"{api.base_url}/v1/jobs/{job_id}/record", headers=auth(), timeout=10).status_code == 204
