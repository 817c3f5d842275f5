"""End to end through the REST API: upload -> Redis -> a real Celery worker ->
results in all four formats. Recognition is Tesseract (see service_harness):
the engine serves only a text model until the house OCR model lands.
"""
from __future__ import annotations

import io

import pymupdf
import pytest
from PIL import Image

import ocr_samples as samples
from api_helpers import KEY_BOB, auth, upload, wait_for_job

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def finished(client):
    """A three-page report and a two-column page in one job, finished."""
    response = client.post("/v1/jobs", headers=auth(),
                           files=upload(("report.pdf", samples.multi_page_pdf(3)),
                                        ("columns.pdf", samples.two_column_pdf())))
    assert response.status_code == 202, response.text
    submitted = response.json()
    job = wait_for_job(client, submitted["id"])
    return submitted, job


def test_a_submitted_job_reports_its_pages_and_finishes(finished):
    submitted, job = finished
    assert submitted["state"] == "queued" and submitted["pages_total"] == 4 and submitted["pages_done"] == 0
    assert job["state"] == "done" and job["pages_done"] == job["pages_total"] == 4 and job["error"] is None
    assert [(p["file"], p["page"], p["state"]) for p in job["pages"]] == [
        (1, 1, "done"), (1, 2, "done"), (1, 3, "done"), (2, 1, "done")]
    assert all(p["reason"] is None and p["regions_ok"] > 0 for p in job["pages"])
    assert job["created_at"].endswith("Z") and job["finished_at"] >= job["created_at"]
    assert [f["filename"] for f in job["files"]] == ["report.pdf", "columns.pdf"]
    assert job["formats"] == ["md", "json", "txt", "pdf"] and job["text_layer"] == "auto"


def test_all_four_formats_come_back(client, finished):
    job_id = finished[0]["id"]
    answers = {fmt: client.get(f"/v1/jobs/{job_id}/result", params={"format": fmt}, headers=auth())
               for fmt in ("md", "json", "txt", "pdf")}
    assert {fmt: a.status_code for fmt, a in answers.items()} == dict.fromkeys(answers, 200)
    assert answers["md"].headers["content-type"].startswith("text/markdown")
    assert answers["pdf"].headers["content-type"] == "application/pdf"
    for page_no in range(3):
        assert samples.page_sentence(page_no) in answers["md"].text
        assert samples.page_sentence(page_no) in answers["txt"].text
    assert "## Quarterly Report" in answers["md"].text and "# columns.pdf" in answers["md"].text
    with pymupdf.open(stream=answers["pdf"].content, filetype="pdf") as pdf:
        assert pdf.page_count == 4


def test_json_is_documents_pages_regions(client, finished):
    result = client.get(f"/v1/jobs/{finished[0]['id']}/result?format=json", headers=auth()).json()
    assert result["job_id"] == finished[0]["id"]
    report, columns = result["documents"]
    assert (report["filename"], report["num_pages"], len(report["pages"])) == ("report.pdf", 3, 3)
    for page in report["pages"] + columns["pages"]:
        assert page["state"] == "done" and page["width"] > 0 and page["height"] > 0 and page["dpi"] == 100
        regions = page["regions"]
        assert [r["reading_index"] for r in regions] == list(range(len(regions)))
        for region in regions:
            assert set(region) >= {"label", "bbox", "bbox_1000", "text", "status", "reading_index", "lines"}
            assert region["status"] == "ok" and region["source"] == "text_layer", "born-digital: its own text"
            assert all(0 <= v <= 1000 for v in region["bbox_1000"])
            assert region["bbox"][2] <= page["width"] and region["bbox"][3] <= page["height"]


def test_two_columns_are_read_left_column_first(client, finished):
    result = client.get(f"/v1/jobs/{finished[0]['id']}/result?format=json", headers=auth()).json()
    regions = result["documents"][1]["pages"][0]["regions"]
    text = "\n".join(region["text"] for region in regions)
    order = [text.index(word) for word in ("Household", *samples.LEFT_WORDS, *samples.RIGHT_WORDS)]
    assert order == sorted(order), text


def test_searchable_pdf_text_is_where_the_words_are(client, finished):
    pdf_bytes = client.get(f"/v1/jobs/{finished[0]['id']}/result?format=pdf", headers=auth()).content
    original = samples.word_boxes(samples.two_column_pdf())
    with pymupdf.open(stream=pdf_bytes, filetype="pdf") as pdf:
        page = pdf[3]
        assert page.search_for("Cherries"), "a viewer's search finds the word"
        layer = {w[4]: w[:4] for w in page.get_text("words")}
    for word in ("Household", *samples.LEFT_WORDS, *samples.RIGHT_WORDS):
        found, expected = layer[word], original[word]
        assert abs((found[0] + found[2]) / 2 - (expected[0] + expected[2]) / 2) < 8, word
        assert abs((found[1] + found[3]) / 2 - (expected[1] + expected[3]) / 2) < 5, word


def test_jobs_are_listed_for_their_owner_only(client, finished):
    job_id = finished[0]["id"]
    mine = client.get("/v1/jobs", headers=auth()).json()["jobs"]
    assert job_id in [job["id"] for job in mine] and "pages" not in mine[0]
    theirs = client.get("/v1/jobs", headers=auth(KEY_BOB)).json()["jobs"]
    assert job_id not in [job["id"] for job in theirs]


def test_another_key_gets_404_and_no_key_gets_401(client, finished):
    job_id = finished[0]["id"]
    for path in (f"/v1/jobs/{job_id}", f"/v1/jobs/{job_id}/result?format=md"):
        answer = client.get(path, headers=auth(KEY_BOB))
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found"
    assert client.delete(f"/v1/jobs/{job_id}", headers=auth(KEY_BOB)).status_code == 404
    for headers in ({}, auth("not-a-key"), {"Authorization": "Basic abc"}):
        answer = client.get(f"/v1/jobs/{job_id}", headers=headers)
        assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
    assert client.post("/v1/jobs", files=upload(("a.pdf", samples.multi_page_pdf(1)))).status_code == 401


def test_an_api_restart_keeps_jobs_and_results(api_settings, finished):
    from fastapi.testclient import TestClient

    from app.main import create_app

    with TestClient(create_app(api_settings)) as restarted:
        job = restarted.get(f"/v1/jobs/{finished[0]['id']}", headers=auth()).json()
        assert job == finished[1]
        text = restarted.get(f"/v1/jobs/{finished[0]['id']}/result?format=txt", headers=auth()).text
        assert samples.page_sentence(2) in text


def test_page_selection_formats_and_cancel(client):
    answer = client.post("/v1/jobs", headers=auth(), files=upload(("report.pdf", samples.multi_page_pdf(4))),
                         data={"pages": "2,4", "formats": "txt"})
    assert answer.status_code == 202, answer.text
    job = wait_for_job(client, answer.json()["id"])
    assert [p["page"] for p in job["pages"]] == [2, 4] and job["formats"] == ["txt"]
    text = client.get(f"/v1/jobs/{job['id']}/result?format=txt", headers=auth()).text
    assert samples.page_sentence(1) in text and samples.page_sentence(3) in text
    assert samples.page_sentence(0) not in text
    not_asked = client.get(f"/v1/jobs/{job['id']}/result?format=pdf", headers=auth())
    assert not_asked.status_code == 404 and not_asked.json()["error"]["code"] == "format_not_requested"
    assert client.delete(f"/v1/jobs/{job['id']}", headers=auth()).status_code == 409

    queued = client.post("/v1/jobs", headers=auth(), files=upload(("report.pdf", samples.multi_page_pdf(8)))).json()
    cancelled = client.delete(f"/v1/jobs/{queued['id']}", headers=auth())
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    early = client.get(f"/v1/jobs/{queued['id']}/result?format=md", headers=auth())
    assert early.status_code == 409 and early.json()["error"]["code"] == "job_not_finished"


def test_figures_are_cropped_and_linked(client):
    answer = client.post("/v1/jobs", headers=auth(), files=upload(("chart.pdf", samples.figure_pdf())))
    job = wait_for_job(client, answer.json()["id"])
    result = client.get(f"/v1/jobs/{job['id']}/result?format=json", headers=auth()).json()
    [figure] = [r for r in result["documents"][0]["pages"][0]["regions"] if r["label"] == "figure"]
    assert figure["status"] == "ok" and figure["text"] == "" and figure["task"] == "skip"
    markdown = client.get(f"/v1/jobs/{job['id']}/result?format=md", headers=auth()).text
    assert f"![figure](figures/{figure['figure']})" in markdown
    assert markdown.index("Sales by Region") < markdown.index("![figure]") < markdown.index("chart above")
    crop = client.get(f"/v1/jobs/{job['id']}/figures/{figure['figure']}", headers=auth())
    assert crop.status_code == 200 and crop.headers["content-type"] == "image/png"
    width, height = Image.open(io.BytesIO(crop.content)).size
    x0, y0, x1, y1 = figure["bbox"]
    assert abs(width - (x1 - x0)) <= 10 and abs(height - (y1 - y0)) <= 10
    assert client.get(f"/v1/jobs/{job['id']}/figures/{figure['figure']}", headers=auth(KEY_BOB)).status_code == 404
    assert client.get(f"/v1/jobs/{job['id']}/figures/..%2Fresult.json", headers=auth()).status_code == 404


def test_openapi_describes_the_jobs_api(client):
    spec = client.get("/openapi.json").json()
    assert {"/v1/jobs", "/v1/jobs/{job_id}", "/v1/jobs/{job_id}/result"} <= set(spec["paths"])
    assert set(spec["paths"]["/v1/jobs"]) == {"get", "post"}
    assert "delete" in spec["paths"]["/v1/jobs/{job_id}"]
    body = spec["paths"]["/v1/jobs"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert set(body["properties"]) == {"files", "pages", "formats", "dpi", "schema", "text_layer", "keep_furniture",
                                       "callback_url", "languages"}
    assert body["properties"]["text_layer"]["enum"] == ["auto", "never", "verify"]


@pytest.mark.parametrize("mode", ["never", "verify"])
def test_the_text_layer_option_is_stored_shown_and_obeyed(client, api_settings, mode):
    answer = client.post("/v1/jobs", headers=auth(), files=upload(("report.pdf", samples.multi_page_pdf(1))),
                         data={"text_layer": mode, "formats": "md"})
    assert answer.status_code == 202, answer.text
    assert answer.json()["text_layer"] == mode
    job = wait_for_job(client, answer.json()["id"])
    assert job["state"] == "done" and job["text_layer"] == mode
    listed = {j["id"]: j for j in client.get("/v1/jobs", headers=auth()).json()["jobs"]}
    assert listed[job["id"]]["text_layer"] == mode
    page = client.get(f"/v1/jobs/{job['id']}/result?format=json", headers=auth()).json()["documents"][0]["pages"][0]
    assert {r["source"] for r in page["regions"]} == {"ocr"}, "recognised"
    assert samples.page_sentence(0) in " ".join(r["text"] for r in page["regions"])
    if mode == "never":
        assert page["text_layer"] is None
        assert {r["text_layer_check"] for r in page["regions"]} == {None}
    else:   # recognised with the layer as the draft, and compared with it
        assert page["text_layer"].startswith("text layer verified"), page["text_layer"]
        assert {r["text_layer_check"] for r in page["regions"]} <= {"agrees", "differs"}
