"""hOCR and ALTO through the REST API (a real worker on Redis, as in test_api_jobs.py): asked for
by name in `formats`, downloaded with `format=`, refused where a job did not ask for them. The
files themselves are checked with third-party tools in tests/workers/test_export_hocr_alto.py."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

import ocr_samples as samples
from api_helpers import auth, upload, wait_for_job

pytestmark = pytest.mark.slow


def _finished(client, **fields) -> dict:
    response = client.post("/v1/jobs", headers=auth(), files=upload(("report.pdf", samples.multi_page_pdf(1))),
                           data=fields)
    assert response.status_code == 202, response.text
    return wait_for_job(client, response.json()["id"])


def test_hocr_and_alto_are_downloaded_when_asked_for_and_refused_when_not(client):
    job = _finished(client, formats="json,hocr,alto")
    assert job["state"] == "done" and job["formats"] == ["json", "hocr", "alto"]
    hocr = client.get(f"/v1/jobs/{job['id']}/result?format=hocr", headers=auth())
    assert hocr.status_code == 200 and hocr.headers["content-type"].startswith("application/xhtml+xml")
    assert f'filename="{job["id"]}.hocr"' in hocr.headers["content-disposition"]
    words = [span.text for span in ET.fromstring(hocr.content).iter("{http://www.w3.org/1999/xhtml}span")
             if span.get("class") == "ocrx_word"]
    assert words == ["Quarterly", "Report", *samples.page_sentence(0).split(), *"The results were good this time".split()]
    alto = client.get(f"/v1/jobs/{job['id']}/result?format=alto", headers=auth())
    assert alto.status_code == 200 and alto.headers["content-type"].startswith("application/xml")
    assert ET.fromstring(alto.content).tag == "{http://www.loc.gov/standards/alto/ns-v4#}alto"
    refused = client.get(f"/v1/jobs/{job['id']}/result?format=md", headers=auth())
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "format_not_requested"

    default = _finished(client)
    assert default["formats"] == ["md", "json", "txt", "pdf"], "hOCR and ALTO are opt-in"
    refused = client.get(f"/v1/jobs/{default['id']}/result?format=alto", headers=auth())
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "format_not_requested"
