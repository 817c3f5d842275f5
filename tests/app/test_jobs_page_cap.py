"""A job over the page cap is refused at submission with a clear 413, before
anything is stored or queued; the job list shows page counts."""
from __future__ import annotations

import ocr_samples as samples
from api_helpers import auth, upload


def test_a_job_over_the_page_cap_is_refused_with_413_and_nothing_is_stored(api_settings, tmp_path):
    from fastapi.testclient import TestClient

    from app.main import create_app

    settings = api_settings.model_copy(update={"data_dir": tmp_path, "max_pages_per_job": 4})
    with TestClient(create_app(settings)) as client:
        answer = client.post("/v1/jobs", headers=auth(), files=upload(("a.pdf", samples.multi_page_pdf(3)),
                                                                      ("b.pdf", samples.multi_page_pdf(2))))
        assert answer.status_code == 413, answer.text
        error = answer.json()["error"]
        assert error["code"] == "document_too_large" and "more than 4 pages" in error["message"]
        assert client.get("/v1/jobs", headers=auth()).json() == {"jobs": []}

        accepted = client.post("/v1/jobs", headers=auth(), files=upload(("a.pdf", samples.multi_page_pdf(3))))
        assert accepted.status_code == 202, accepted.text
        [listed] = client.get("/v1/jobs", headers=auth()).json()["jobs"]
        assert (listed["id"], listed["pages_total"], listed["pages_done"]) == (accepted.json()["id"], 3, 0)
        assert "pages" not in listed
