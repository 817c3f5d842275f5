"""hOCR and ALTO XML outputs, and the JSON's word boxes, on real jobs (`JobRunner` called
in-process as the Celery tasks call it, real vision models, real Tesseract), checked with tools
we did not write:

- hOCR: the `hocr-spec` validator (kba's hOCR 1.2 spec), hocr-tools' `hocr-split` and
  `hocr-check`, and OCRmyPDF's own hOCR reader and PDF renderer, which must put our words where
  the original PDF has them.
- ALTO: `alto-tools` reads its text and word confidences (ns-v4). No package in the registries
  this project can reach ships the ALTO v4 schema (looked for in ocrd, ocrd-validators,
  ocrd-page-to-alto, ocrd-fileformat, alto-tools, alto-xml, alto2txt, simple-alto-parser, pdfalto,
  pangoline-tool, kraken, dinglehopper, metsrw, and Debian's archive), and it may not be copied
  into the repository: schema validation is left to a deployment that can fetch it.

A born-digital job (text layer `auto`) shows the layer's own word boxes; the same page
recognised (`never`, with `word_alignment`) shows aligned ones (`ctc`), measured against where the
PDF put each word.
"""
from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from contextlib import redirect_stdout
from pathlib import Path

import ocrmypdf
import pymupdf
import pytest
from alto_tools import alto_tools
from ocrmypdf.font import MultiFontManager
from ocrmypdf.fpdf_renderer import Fpdf2PdfRenderer
from ocrmypdf.hocrtransform import HocrParser

import ocr_samples as samples
from workers.job_runner import JobRunner
from workers.job_service import JobService, Upload, parse_formats
from workers.recognizers.tesseract import TesseractRecognizer
from workers.settings import Settings

DPI = 100
BIN = Path(sys.executable).parent
ALTO = "{http://www.loc.gov/standards/alto/ns-v4#}"
HEADER = "Northwind Water Board Annual Report 2026"
BODY = ("Pumps at the north station were serviced in March.",
        "Two valves were replaced and the cost was recorded.")


def furnished_pdf() -> bytes:
    """Three pages, each with a running header, a title, two body lines and 'Page N of 3' at the foot."""
    doc = pymupdf.open()
    for page_no in range(3):
        page = doc.new_page(width=samples.PAGE_W, height=samples.PAGE_H)
        page.insert_text((72, 40), HEADER, fontname="helv", fontsize=10)
        page.insert_text((72, 130), f"Section {page_no + 1}", fontname="hebo", fontsize=20)
        for i, line in enumerate(BODY):
            page.insert_text((72, 190 + 28 * i), line, fontname="helv", fontsize=14)
        page.insert_text((270, 805), f"Page {page_no + 1} of 3", fontname="helv", fontsize=10)
    return doc.tobytes()


def _job(tmp_path: Path, uploads: list[Upload], text_layer: str, **options) -> tuple[dict, Path]:
    settings = Settings(data_dir=tmp_path, recognizer="tesseract", render_dpi=DPI, vision_num_threads=1, **options)
    service = JobService(settings)
    job = service.submit("tester", uploads, formats="json,hocr,alto", text_layer=text_layer)
    runner = JobRunner(settings, TesseractRecognizer())
    for file_index, page_index in runner.start_job(job.id):
        runner.run_page(job.id, file_index, page_index, final_attempt=True)
    assert runner.finish_job(job.id)
    job = service.store.get_job(job.id)
    assert not service.result_path(job, "md").exists(), "only the formats asked for are written"
    return json.loads(service.result_path(job, "json").read_text()), service.result_path(job, "json").parent


@pytest.fixture(scope="module")
def layer_job(tmp_path_factory):
    return _job(tmp_path_factory.mktemp("layer"), [Upload("report.pdf", furnished_pdf()),
                                                   Upload("columns.pdf", samples.two_column_pdf())], "auto")


@pytest.fixture(scope="module")
def recognised_job(tmp_path_factory):
    return _job(tmp_path_factory.mktemp("recognised"), [Upload("columns.pdf", samples.two_column_pdf())], "never",
                word_alignment=True)


def _lines(result: dict, document: int, page: int) -> list[dict]:
    regions = sorted(result["documents"][document]["pages"][page]["regions"], key=lambda r: r["reading_index"])
    return [line for region in regions for line in region["lines"]]


def _pdf_words(pdf: bytes, page_no: int) -> list[tuple[str, tuple[float, float, float, float]]]:
    """The PDF's words and boxes in page pixels at DPI, as PyMuPDF reads them."""
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        return [(w[4], tuple(v * DPI / 72 for v in w[:4])) for w in doc[page_no].get_text("words")]


def test_hocr_and_alto_are_asked_for_by_name_only():
    assert parse_formats(None) == parse_formats("") == ("md", "json", "txt", "pdf")
    assert parse_formats("alto, HOCR ,json") == ("json", "hocr", "alto")


def test_a_layer_pages_words_keep_the_pdfs_own_boxes(layer_job):
    result, _ = layer_job
    for document, pdf, num_pages in ((0, furnished_pdf(), 3), (1, samples.two_column_pdf(), 1)):
        for page in range(num_pages):
            truth = _pdf_words(pdf, page)
            for line in _lines(result, document, page):
                words = line["words"]
                assert [w["text"] for w in words] == line["text"].split(), line
                for word in words:
                    assert word["box_source"] == "text_layer" and word["confidence"] is None, word
                    assert any(text == word["text"] and word["bbox"] == pytest.approx(box, abs=0.1)
                               for text, box in truth), word


def test_recognised_words_are_aligned_marked_and_near_where_they_are_printed(recognised_job):
    result, _ = recognised_job
    truth = _pdf_words(samples.two_column_pdf(), 0)
    errors = []
    for line in _lines(result, 0, 0):
        x0, y0, x1, y1 = line["bbox"]
        for word in line["words"]:
            assert word["box_source"] == ("ctc" if len(line["words"]) > 1 else "interpolated"), word
            wx0, wy0, wx1, wy1 = word["bbox"]
            assert x0 - 0.01 <= wx0 < wx1 <= x1 + 0.01 and (wy0, wy1) == (y0, y1), (word, line)
            # the printed word of that text in the line's row nearest to it (Tesseract may misread one)
            printed = [box for text, box in truth if text == word["text"] and y0 <= (box[1] + box[3]) / 2 <= y1]
            if printed:
                errors.append(min(abs((wx0 + wx1) / 2 - (b[0] + b[2]) / 2) for b in printed) / (y1 - y0))
    assert len(errors) > 20
    assert max(errors) < 0.25, sorted(errors)[-5:]


def test_hocr_is_valid_by_the_hocr_spec_validator(layer_job, recognised_job):
    for _, folder in (layer_job, recognised_job):
        checked = subprocess.run([BIN / "hocr-spec", folder / "result.hocr"], capture_output=True, text=True)
        assert checked.returncode == 0 and "Document is valid" in checked.stdout, checked.stdout
        assert "[ERROR]" not in checked.stdout


def _split_pages(hocr: Path, into: Path) -> list[Path]:
    """hocr-tools' hocr-split: one file per ocr_page (what a page-by-page consumer reads)."""
    into.mkdir()
    subprocess.run([BIN / "hocr-split", hocr, into / "page-%03d.hocr"], check=True, capture_output=True)
    return sorted(into.glob("page-*.hocr"))


def test_each_hocr_page_passes_hocr_tools_check(layer_job, tmp_path):
    _, folder = layer_job
    pages = _split_pages(folder / "result.hocr", tmp_path / "pages")
    assert len(pages) == 4
    for page in pages:
        checked = subprocess.run([BIN / "hocr-check", page], capture_output=True, text=True)
        report = checked.stdout + checked.stderr
        assert checked.returncode == 0 and "ok 1" in report and "not ok" not in report, report


def test_ocrmypdf_makes_a_searchable_pdf_from_our_hocr_with_every_word_in_place(layer_job, tmp_path):
    _, folder = layer_job
    fonts = MultiFontManager(Path(ocrmypdf.__file__).parent / "data")
    originals = [(furnished_pdf(), i) for i in range(3)] + [(samples.two_column_pdf(), 0)]
    for page_file, (pdf, page_no) in zip(_split_pages(folder / "result.hocr", tmp_path / "pages"), originals):
        page = HocrParser(page_file).parse()
        assert page.dpi == DPI
        out = tmp_path / f"{page_file.stem}.pdf"
        Fpdf2PdfRenderer(page=page, dpi=page.dpi, multi_font_manager=fonts, invisible_text=True).render(out)
        with pymupdf.open(out) as made, pymupdf.open(stream=pdf, filetype="pdf") as original:
            found = [(w[4], w[:4]) for w in made[0].get_text("words")]
            expected = [(w[4], w[:4]) for w in original[page_no].get_text("words")]
        assert sorted(text for text, _ in found) == sorted(text for text, _ in expected), page_file
        for text, (x0, y0, x1, y1) in found:
            assert any(abs(x0 - ex0) < 2 and abs(x1 - ex1) < 3 and abs((y0 + y1) / 2 - (ey0 + ey1) / 2) < 4
                       for other, (ex0, ey0, ex1, ey1) in expected if other == text), (text, (x0, y0, x1, y1))


def _hocr_page(folder: Path, number: int) -> ET.Element:
    root = ET.parse(folder / "result.hocr").getroot()
    return root.findall(".//{http://www.w3.org/1999/xhtml}div[@class='ocr_page']")[number]


def test_hocr_keeps_furniture_roles_and_reading_order(layer_job):
    result, folder = layer_job
    page = _hocr_page(folder, 1)
    assert page.get("title").startswith('image "report.pdf"; bbox 0 0 ') and "ppageno 1; scan_res 100 100" in \
        page.get("title")
    areas = page.findall("{http://www.w3.org/1999/xhtml}div")
    orders = [int(re.search(r"order (\d+)", area.get("title")).group(1)) for area in areas]
    assert orders == sorted(orders)
    roles = {area.get("data-role"): area for area in areas}
    regions = result["documents"][0]["pages"][1]["regions"]
    foot = next(r["role"] for r in regions if r["text"] == "Page 2 of 3")
    assert foot in ("footer", "page_number") and {r["role"] for r in regions} == set(roles) == {"header", foot, "body"}
    line_class = {role: {span.get("class") for span in area.iter() if span.get("class", "").startswith("ocr_")
                         and span.get("class") not in ("ocr_carea", "ocr_par")} for role, area in roles.items()}
    assert line_class == {"header": {"ocr_header"}, foot: {"ocr_footer"}, "body": {"ocr_line"}}


def _alto_text(path: Path) -> tuple[list[str], float]:
    """alto-tools' own reading of the file: its text lines, and its mean word confidence (%)."""
    with path.open("rb") as file:
        _, xml, xmlns = alto_tools.alto_parse(file)
    out = io.StringIO()
    with redirect_stdout(out):
        alto_tools.alto_text(xml, xmlns)
        confidence = alto_tools.alto_confidence(path, xml, xmlns)
    lines = [line.strip() for line in out.getvalue().splitlines() if line.strip()]
    return [line for line in lines if not line.startswith("File: ")], confidence


def test_alto_tools_reads_back_every_line(layer_job, recognised_job):
    for result, folder in (layer_job, recognised_job):
        lines, _ = _alto_text(folder / "result.alto")
        expected = [line["text"] for document in range(len(result["documents"]))
                    for page in range(len(result["documents"][document]["pages"]))
                    for line in _lines(result, document, page)]
        # in the file's order: margins before the print space (the reading order is IDNEXT's, below)
        assert sorted(lines) == sorted(expected)
        # every IDREF names an element of the file (what the schema's xsd:IDREFS asks)
        root = ET.parse(folder / "result.alto").getroot()
        ids = {element.get("ID") for element in root.iter()} - {None}
        assert all(ref in ids for element in root.iter() for name in ("TAGREFS", "IDNEXT")
                   for ref in (element.get(name) or "").split())


def test_alto_puts_furniture_in_the_margins_and_chains_the_reading_order(layer_job):
    result, folder = layer_job
    root = ET.parse(folder / "result.alto").getroot()
    assert root.tag == f"{ALTO}alto" and root.find(f"{ALTO}Description/{ALTO}MeasurementUnit").text == "pixel"
    tags = {tag.get("ID"): tag.get("LABEL") for tag in root.find(f"{ALTO}Tags")}
    pages = root.findall(f"{ALTO}Layout/{ALTO}Page")
    assert [p.get("PHYSICAL_IMG_NR") for p in pages] == ["1", "2", "3", "4"]
    page = pages[1]
    spaces = {child.tag.removeprefix(ALTO): child for child in page}
    assert list(spaces) == ["TopMargin", "BottomMargin", "PrintSpace"]
    assert {tags[b.get("TAGREFS")] for b in spaces["TopMargin"]} == {"header"}
    assert {tags[b.get("TAGREFS")] for b in spaces["BottomMargin"]} <= {"footer", "page_number"}
    assert [s.get("CONTENT") for s in spaces["BottomMargin"].iter(f"{ALTO}String")] == ["Page", "2", "of", "3"]
    blocks = {block.get("ID"): block for space in spaces.values() for block in space}
    following = {block.get("IDNEXT") for block in blocks.values()}
    first = next(block_id for block_id in blocks if block_id not in following)
    chain = [first]
    while blocks[chain[-1]].get("IDNEXT"):
        chain.append(blocks[chain[-1]].get("IDNEXT"))
    texts = [" ".join(s.get("CONTENT") for s in blocks[block_id].iter(f"{ALTO}String")) for block_id in chain]
    regions = sorted(result["documents"][0]["pages"][1]["regions"], key=lambda r: r["reading_index"])
    assert texts == [" ".join(region["text"].split()) for region in regions]
    strings = list(page.iter(f"{ALTO}String"))
    assert strings and {tags[s.get("TAGREFS")] for s in strings} == {"text_layer"}


def test_a_result_stored_before_words_and_a_region_read_whole_still_export(layer_job, tmp_path):
    """Lines without `words` (older results) and a region with text but no lines (read whole)
    get interpolated words, marked so, and the files stay valid."""
    from workers.export_alto import render_alto
    from workers.export_hocr import render_hocr

    result, _ = layer_job
    older = json.loads(json.dumps(result))
    page = older["documents"][1]["pages"][0]
    for region in page["regions"]:
        for line in region["lines"]:
            del line["words"]
    whole = page["regions"][0]
    whole["lines"] = []
    (tmp_path / "older.hocr").write_text(render_hocr(older))
    checked = subprocess.run([BIN / "hocr-spec", tmp_path / "older.hocr"], capture_output=True, text=True)
    assert checked.returncode == 0 and "[ERROR]" not in checked.stdout, checked.stdout
    (tmp_path / "older.alto").write_text(render_alto(older))
    lines, _ = _alto_text(tmp_path / "older.alto")
    assert sorted(lines) == sorted([" ".join(whole["text"].split())] + [
        line["text"] for line in _lines(older, 0, 0) + _lines(older, 0, 1) + _lines(older, 0, 2) + _lines(older, 1, 0)])
    root = ET.parse(tmp_path / "older.alto").getroot()
    last_page = root.findall(f"{ALTO}Layout/{ALTO}Page")[-1]
    assert {s.get("TAGREFS") for s in last_page.iter(f"{ALTO}String")} == {"box_interpolated"}


def test_a_control_character_in_a_reading_does_not_break_the_files(layer_job, tmp_path):
    from workers.export_alto import render_alto
    from workers.export_hocr import render_hocr

    result = json.loads(json.dumps(layer_job[0]))
    word = result["documents"][0]["pages"][0]["regions"][0]["lines"][0]["words"][0]
    word["text"] = "Nor\x0cth\x00wind"
    (tmp_path / "odd.hocr").write_text(render_hocr(result))
    checked = subprocess.run([BIN / "hocr-spec", tmp_path / "odd.hocr"], capture_output=True, text=True)
    assert checked.returncode == 0 and "[ERROR]" not in checked.stdout, checked.stdout
    (tmp_path / "odd.alto").write_text(render_alto(result))
    contents = [s.get("CONTENT") for s in ET.parse(tmp_path / "odd.alto").getroot().iter(f"{ALTO}String")]
    assert "Nor\ufffdth\ufffdwind" in contents


def test_each_line_says_its_language_and_direction(recognised_job, tmp_path):
    """A line's language (a Tesseract code in the JSON) is its `lang` in hOCR as Tesseract writes it
    (OCRmyPDF picks fonts by it) and its `LANG` in ALTO as BCP 47; a right-to-left line is
    `dir="rtl"`; the document's `lang` is its lines' most common. The hOCR still passes the spec's
    validator, and OCRmyPDF's reader takes each line's language and direction."""
    import copy

    from workers.export_alto import render_alto
    from workers.export_hocr import render_hocr

    result = copy.deepcopy(recognised_job[0])
    lines = [line for document in result["documents"] for page in document["pages"] for region in page["regions"]
             for line in region["lines"]]
    assert len(lines) >= 3
    for line in lines:
        line["language"], line["script"] = "rus", "Cyrillic"
    lines[0]["language"], lines[0]["script"] = "ara", "Arabic"
    lines[1]["language"], lines[1]["script"] = "chi_sim", "Han"
    lines[2]["language"], lines[2]["script"] = None, "Latin"
    hocr = tmp_path / "result.hocr"
    hocr.write_text(render_hocr(result))
    checked = subprocess.run([BIN / "hocr-spec", hocr], capture_output=True, text=True)
    assert checked.returncode == 0 and "Document is valid" in checked.stdout and "[ERROR]" not in checked.stdout
    root = ET.fromstring(hocr.read_text().split("\n", 2)[2])
    assert root.get("lang") == "ru"
    spans = [span for span in root.iter("{http://www.w3.org/1999/xhtml}span")
             if span.get("class") in ("ocr_line", "ocr_header", "ocr_footer")]
    assert [(span.get("lang"), span.get("dir")) for span in spans[:4]] == [
        ("ara", "rtl"), ("chi_sim", None), (None, None), ("rus", None)]
    read = HocrParser(hocr).parse().iter_by_class("ocr_line", "ocr_header", "ocr_footer")
    assert [(line.language, line.direction) for line in read[:2]] == [("ara", "rtl"), ("chi_sim", None)]
    alto = ET.fromstring(render_alto(result).split("\n", 1)[1])
    assert [line.get("LANG") for line in alto.iter(f"{ALTO}TextLine")][:4] == ["ar", "zh-Hans", None, "ru"]
