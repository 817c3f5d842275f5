"""A job's result as hOCR 1.2 (XHTML): the form OCR tools and archives exchange, and what
OCRmyPDF, hocr-tools and search front ends read.

    html > body > div.ocr_page (bbox, ppageno, scan_res, image)
      > div.ocr_carea (bbox, order: the reading index) > p.ocr_par
        > span.ocr_line | span.ocr_header | span.ocr_footer (bbox)
          > span.ocrx_word (bbox, x_wconf)
      > div.ocr_photo (a figure with no text)

One file holds every page of the job's documents, in order (`ppageno` counts them from 0, the
`image` property names each page's file). Boxes are pixels of the rendered page at `scan_res`.

Furniture keeps its role (`workers.furniture`): a running header's lines are `ocr_header`, a
footer's `ocr_footer` (as Tesseract writes them, and as readers such as OCRmyPDF take them); a
page number's by where it stands on the page; every block says its exact role and layout label
in `data-role` and `data-label`. What hOCR's properties cannot say goes in `data-` attributes,
which HTML keeps and hOCR readers pass over: each word's `data-box-source` (`text_layer`, the
PDF's own box; `ctc`, aligned on the line image; `interpolated`, spread along its line: see
`workers.line_words`), since the spec's validator rejects unknown properties in `title`.
Each line says its language where it is known, as Tesseract writes hOCR (`lang`, Tesseract's code:
"rus", "chi_sim"; OCRmyPDF chooses each line's font by it), and `dir="rtl"` where its script runs
right to left; the document's `lang` (BCP 47, as HTML takes it) is its lines' most common.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from typing import Any

from workers.export_layout import ExportPage, ExportRegion, IntBox, export_pages
from workers.recognizers.languages import bcp47

XHTML = "http://www.w3.org/1999/xhtml"
CAPABILITIES = ("ocr_page ocr_carea ocr_par ocr_line ocrx_word ocr_header ocr_footer ocr_photo ocrp_wconf ocrp_lang "
                "ocrp_dir")
_HEADER = ('<?xml version="1.0" encoding="UTF-8"?>\n'
           '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" '
           '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">\n')


def render_hocr(result: dict[str, Any], system: str = "ocrserve") -> str:
    pages = list(export_pages(result))
    languages = Counter(line.language for page in pages for region in page.regions for line in region.lines
                        if line.language)
    main_language = (bcp47(languages.most_common(1)[0][0]) if languages else None) or "en"
    html = ET.Element("html", {"xmlns": XHTML, "xml:lang": main_language, "lang": main_language})
    head = ET.SubElement(html, "head")
    ET.SubElement(head, "title").text = f"OCR of job {result['job_id']}"
    ET.SubElement(head, "meta", {"http-equiv": "Content-Type", "content": "text/html;charset=utf-8"})
    ET.SubElement(head, "meta", {"name": "ocr-system", "content": system})
    ET.SubElement(head, "meta", {"name": "ocr-capabilities", "content": CAPABILITIES})
    if languages:
        ET.SubElement(head, "meta", {"name": "ocr-langs", "content": " ".join(sorted(languages))})
    ET.SubElement(head, "meta", {"name": "ocr-number-of-pages", "content": str(len(pages))})
    body = ET.SubElement(html, "body")
    for index, page in enumerate(pages):
        _page(body, page, index)
    ET.indent(html, space=" ")
    return _HEADER + ET.tostring(html, encoding="unicode") + "\n"


def _page(body: ET.Element, page: ExportPage, index: int) -> None:
    image = page.filename.replace('"', "_").replace(";", "_")
    props = [f'image "{image}"', f"bbox 0 0 {page.width} {page.height}", f"ppageno {index}"]
    if page.dpi:
        props.append(f"scan_res {round(page.dpi)} {round(page.dpi)}")
    div = ET.SubElement(body, "div", {"class": "ocr_page", "id": f"page_{index + 1}", "title": "; ".join(props)})
    for region in page.regions:
        ident = f"{index + 1}_{region.reading_index + 1}"
        attrs = {"data-role": region.role, "data-label": region.label}
        if region.is_picture:
            ET.SubElement(div, "div", {"class": "ocr_photo", "id": f"photo_{ident}",
                                       "title": f"{_bbox(region.bbox)}; order {region.reading_index}", **attrs})
            continue
        area = ET.SubElement(div, "div", {"class": "ocr_carea", "id": f"block_{ident}",
                                          "title": f"{_bbox(region.bbox)}; order {region.reading_index}", **attrs})
        par = ET.SubElement(area, "p", {"class": "ocr_par", "id": f"par_{ident}", "title": _bbox(region.bbox)})
        line_class = _line_class(region, page.height)
        for line_no, line in enumerate(region.lines, 1):
            attrs = {"class": line_class, "id": f"line_{ident}_{line_no}", "title": _bbox(line.bbox)}
            if line.language:
                attrs["lang"] = line.language
            if line.right_to_left:
                attrs["dir"] = "rtl"
            span = ET.SubElement(par, "span", attrs)
            for word_no, word in enumerate(line.words, 1):
                title = _bbox(word.bbox)
                if word.confidence is not None:
                    title += f"; x_wconf {round(100 * word.confidence)}"
                element = ET.SubElement(span, "span", {"class": "ocrx_word", "id": f"word_{ident}_{line_no}_{word_no}",
                                                       "title": title, "data-box-source": word.box_source})
                element.text = word.text
                element.tail = " "   # the words of a line read apart, whoever takes the text


def _line_class(region: ExportRegion, page_height: int) -> str:
    if region.role == "header":
        return "ocr_header"
    if region.role == "footer":
        return "ocr_footer"
    if region.role == "page_number":
        return "ocr_header" if (region.bbox[1] + region.bbox[3]) / 2 < page_height / 2 else "ocr_footer"
    return "ocr_line"


def _bbox(box: IntBox) -> str:
    return "bbox {} {} {} {}".format(*box)
