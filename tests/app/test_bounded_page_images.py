"""The web page's page images are rendered once, stored with the job, and served
from disk after that; first renders run in a bounded number of slots. Real app
(TestClient), embedded broker, real PDF rendering; no worker needed (the image
comes from the stored upload)."""
from __future__ import annotations

import io
from pathlib import Path

import pymupdf
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from app.main import create_app
from workers.settings import Settings

KEY = "page-image-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


def _pdf(num_pages: int) -> bytes:
    doc = pymupdf.open()
    for number in range(num_pages):
        doc.new_page().insert_text((72, 72), f"page {number + 1}")
    data = doc.tobytes()
    doc.close()
    return data


@pytest.fixture
def api(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", api_keys=KEY, render_dpi=50, max_concurrent_page_renders=1)
    with TestClient(create_app(settings)) as client:
        job = client.post("/v1/jobs", headers=AUTH, files=[("files", ("two.pdf", _pdf(2), "application/pdf"))])
        assert job.status_code == 202, job.text
        yield client, job.json()["id"], Path(settings.data_dir)


def test_a_page_is_rendered_once_then_served_from_its_stored_file(api):
    client, job_id, data_dir = api
    first = client.get(f"/v1/jobs/{job_id}/pages/1/2/image", headers=AUTH)
    assert first.status_code == 200 and first.headers["content-type"] == "image/png"
    assert Image.open(io.BytesIO(first.content)).size == (414, 585)   # A4 at the job's 50 DPI
    stored = data_dir / "results" / job_id / "page-images" / "0-1.png"
    assert stored.read_bytes() == first.content
    # Without its upload the page cannot be rendered again: the answer can only come from the stored file.
    (data_dir / "uploads" / job_id / "0.pdf").unlink()
    again = client.get(f"/v1/jobs/{job_id}/pages/1/2/image", headers=AUTH)
    assert again.status_code == 200 and again.content == first.content
    missing = client.get(f"/v1/jobs/{job_id}/pages/1/1/image", headers=AUTH)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "upload_missing"


def test_first_renders_are_bounded_and_stored_pages_need_no_slot(api, monkeypatch):
    client, job_id, _ = api
    assert client.get(f"/v1/jobs/{job_id}/pages/1/1/image", headers=AUTH).status_code == 200
    monkeypatch.setattr("app.routes_pages.RENDER_WAIT_S", 0.01)
    slots = client.app.state.page_render_slots
    assert slots.acquire(blocking=False)          # the only render slot, taken (as by a render in progress)
    try:
        busy = client.get(f"/v1/jobs/{job_id}/pages/1/2/image", headers=AUTH)
        assert busy.status_code == 503 and busy.json()["error"]["code"] == "busy_rendering"
        assert int(busy.headers["Retry-After"]) > 0
        assert client.get(f"/v1/jobs/{job_id}/pages/1/1/image", headers=AUTH).status_code == 200
    finally:
        slots.release()
    assert client.get(f"/v1/jobs/{job_id}/pages/1/2/image", headers=AUTH).status_code == 200


def test_a_deleted_job_takes_its_page_images_with_it(api):
    client, job_id, data_dir = api
    assert client.get(f"/v1/jobs/{job_id}/pages/1/1/image", headers=AUTH).status_code == 200
    assert client.delete(f"/v1/jobs/{job_id}", headers=AUTH).status_code == 200          # cancel
    assert client.delete(f"/v1/jobs/{job_id}/record", headers=AUTH).status_code == 204
    assert not (data_dir / "results" / job_id).exists()
