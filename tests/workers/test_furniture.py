"""Page furniture (workers.furniture): found on the page and across pages, kept in the JSON by
role, left out of Markdown and text unless the job keeps it.

The rules are checked on placed boxes; the whole path on a generated four-page report read from
its text layer through a real job (layout model, line detector, job runner, result writers)."""
from __future__ import annotations

import json

import pymupdf
import pytest

from workers.furniture import Placed, is_page_number, page_roles, repeated_roles, signature
from workers.job_runner import JobRunner
from workers.job_service import JobService, Upload
from workers.recognizers.tesseract import TesseractRecognizer
from workers.settings import Settings

W, H = 1000.0, 1400.0
BODY = "Members met in the spring and agreed the accounts for the year after a long debate."


def _body(y: float, text: str = BODY, x0: float = 150, x1: float = 850) -> Placed:
    return Placed((x0, y, x1, y + 200), text, "body", "text", "text")


def _strip(y: float, text: str, x0: float = 150, x1: float = 850, role: str = "body") -> Placed:
    return Placed((x0, y, x1, y + 25), text, role, "text", "text")


@pytest.mark.parametrize("text", ["12", "- 12 -", "Page 3 of 10", "xiv", "p. 7", "— 104 —", "3/12"])
def test_page_numbers_are_known_by_their_text(text):
    assert is_page_number(text)


@pytest.mark.parametrize("text", ["12 apples", "Table 3", "1. Introduction", "2024 was a good year", "", "I"*9])
def test_numbers_with_words_are_not_page_numbers(text):
    assert not is_page_number(text)


def test_a_lone_number_in_the_bottom_band_is_a_page_number_but_not_in_the_body():
    regions = [_body(200), _strip(1330, "17"), _strip(700, "17")]
    assert page_roles(regions, W, H) == ["body", "page_number", "body"]


def test_a_page_number_the_layout_model_calls_a_title_is_still_a_page_number():
    number = Placed((820, 60, 850, 85), "17", "body", "text", "title")
    heading = Placed((150, 60, 600, 85), "3.1. INTRODUCTION", "body", "text", "title")
    assert page_roles([number, heading, _body(200)], W, H) == ["page_number", "header", "body"]


def test_line_numbers_and_margin_notes_lie_outside_the_body_columns():
    numbers = Placed((90, 200, 120, 400), "5\n10\n15", "body", "text", "text", ("5", "10", "15"))
    note = Placed((20, 420, 140, 480), "See also the 1998 minutes", "body", "text", "text")
    inside = Placed((400, 500, 520, 530), "a short line", "body", "text", "text")
    regions = [_body(200), _body(420), numbers, note, inside]
    assert page_roles(regions, W, H) == ["body", "body", "line_numbers", "margin_note", "body"]


def test_no_body_columns_means_no_margin_rules():
    """A page of narrow boxes only (a form, a poster) has no columns to be outside of."""
    regions = [Placed((20, 420, 140, 480), "Name", "body", "text", "text")]
    assert page_roles(regions, W, H) == ["body"]


def test_a_strip_repeated_at_the_same_height_is_a_running_header():
    pages = [(W, H, [_strip(60, f"Proceedings of the Society, vol. {n}"), _body(200), _strip(1340, f"page {n}")])
             for n in (3, 4, 5)]
    assert repeated_roles(pages) == [["header", "body", "footer"]] * 3
    assert signature("Proceedings, vol. 12 — xiv") == signature("proceedings,  VOL. 13 — xv")


def test_a_section_title_level_with_a_page_number_is_a_running_header():
    regions = [_strip(60, "3.8. ADJUSTING TAG PLACEMENT", x0=150, x1=600), _strip(62, "9", x0=820, x1=850), _body(200)]
    assert page_roles(regions, W, H) == ["header", "page_number", "body"]


def test_text_that_does_not_repeat_or_moves_stays_body():
    pages = [(W, H, [_strip(60, "A heading only here"), _body(200)]),
             (W, H, [_strip(60, "Another title"), _body(200)]),
             (W, H, [_strip(160, "A heading only here"), _body(300)])]   # lower on the page: no repeat
    assert repeated_roles(pages) == [["body", "body"]] * 3


def test_one_page_has_nothing_to_repeat_and_two_pages_need_each_other():
    one = [(W, H, [_strip(60, "Running title"), _body(200)])]
    assert repeated_roles(one) == [["body", "body"]]
    two = [(W, H, [_strip(60, "Running title"), _body(200)])] * 2
    assert repeated_roles(two) == [["header", "body"]] * 2


# --- the whole path --------------------------------------------------------------------------

HEADER = "Journal of Reproducible Test Results"
PARAGRAPHS = ("Badgers gathered near the river in great numbers this season.",
              "Owls were counted twice by separate teams and the counts agreed.")


def _report_pdf(num_pages: int = 4) -> bytes:
    """A running header at the top of every page, a page number at the bottom, body text between."""
    doc = pymupdf.open()
    for n in range(1, num_pages + 1):
        page = doc.new_page(width=595, height=842)
        page.insert_text((72, 40), HEADER, fontname="helv", fontsize=9)
        for i, sentence in enumerate(PARAGRAPHS):
            box = pymupdf.Rect(72, 150 + 160 * i, 523, 300 + 160 * i)
            assert page.insert_textbox(box, f"{sentence} " * 4 + f"Section {n}.{i + 1}.", fontname="helv",
                                       fontsize=13) >= 0
        page.insert_text((290, 810), str(n), fontname="helv", fontsize=10)
    return doc.tobytes()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    results = {}
    for keep in (False, True):
        settings = Settings(data_dir=tmp_path_factory.mktemp(f"furniture-{keep}"), recognizer="tesseract",
                            render_dpi=100, vision_num_threads=1)
        service = JobService(settings)
        job = service.submit("tester", [Upload("report.pdf", _report_pdf())], keep_furniture=keep)
        runner = JobRunner(settings, TesseractRecognizer())
        for file_index, page_index in runner.start_job(job.id):
            runner.run_page(job.id, file_index, page_index, final_attempt=True)
        assert runner.finish_job(job.id)
        results[keep] = {fmt: service.result_path(job, fmt).read_text() for fmt in ("json", "md", "txt")}
    return results


def test_the_json_keeps_furniture_with_its_role(report):
    result = json.loads(report[False]["json"])
    for page in result["documents"][0]["pages"]:
        roles = {region["text"].strip(): region["role"] for region in page["regions"]}
        assert roles.get(HEADER) == "header", roles
        assert roles.get(str(page["page"])) in ("page_number", "footer"), roles
        assert any(role == "body" and "Badgers" in text for text, role in roles.items())


def test_markdown_and_text_leave_furniture_out_by_default_and_keep_it_on_request(report):
    for fmt in ("md", "txt"):
        default, kept = report[False][fmt], report[True][fmt]
        assert "Badgers gathered" in default and "Owls were counted" in default
        assert HEADER not in default and "<!-- header" not in default
        assert kept.count(HEADER) == 4
    pages = report[False]["txt"].split("\f")
    assert all(not line.strip().isdigit() for page in pages for line in page.splitlines()), "no page numbers"
    assert [p.strip().splitlines()[-1] for p in report[True]["txt"].split("\f") if p.strip()] == ["1", "2", "3", "4"]
