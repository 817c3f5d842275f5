"""One job's result with every state the page must show, for the browser tests: furniture, a
heading, prose with a low-confidence line, a reading that differs from the PDF text layer, a
region read from the layer after recognition failed, one not read at all, a code listing with a
line wider than a phone, a table with spanning cells, a formula, a figure.

The real service cannot be made to produce these on demand (its recogniser reads clean test pages
at full confidence), so `serve_fabricated_job` answers this job's API calls inside the browser
(Playwright's page.route) for one made-up job id; the page, its scripts, the CSP and every other
call are real.
"""
from __future__ import annotations

import io
import json

from PIL import Image, ImageDraw
from playwright.sync_api import Page, Route

JOB_ID = "f" * 32
WIDTH, HEIGHT = 1240, 1754
LISTING = [
    "> x <- array(1:20, dim=c(4,5))   # Generate a 4 by 5 array.",
    "> x",
    "     [,1] [,2] [,3] [,4] [,5]",
    "[1,]    1    5    9   13   17",
    "[2,]    2    6   10   14   18",
    "> summary(lm(weight ~ group, data = PlantGrowth), correlation = TRUE, symbolic.cor = FALSE)  # one long line",
]
SPANNING_TABLE = ('<table><thead><tr><th rowspan="2">Region</th><th colspan="2">Sales</th></tr>'
                  "<tr><th>2025</th><th>2026</th></tr></thead>"
                  "<tbody><tr><td>North</td><td>12</td><td>15</td></tr></tbody></table>")


def _line(bbox, text, confidence=None, layer_text=None):
    return {"bbox": bbox, "text": text, "confidence": confidence,
            "low_confidence": confidence is not None and confidence < 0.5, "layer_text": layer_text}


def _region(index, label, bbox, lines, blocks, *, role="body", task="text", status="ok", source="ocr",
            reason=None, check=None, figure=None, text=None):
    return {"reading_index": index, "label": label, "task": task, "role": role, "bbox": bbox,
            "bbox_1000": [round(v * 1000 / (WIDTH if i % 2 == 0 else HEIGHT)) for i, v in enumerate(bbox)],
            "text": text if text is not None else "\n".join(line["text"] for line in lines), "status": status,
            "origin": "layout", "source": source, "reason": reason, "lines": lines, "figure": figure,
            "blocks": blocks, "text_layer_check": check}


def _rows(x0, y0, texts, step=34, width=900, confidences=None):
    confidences = confidences or [0.97] * len(texts)
    return [_line([x0, y0 + i * step, x0 + width, y0 + i * step + 26], text, confidence)
            for i, (text, confidence) in enumerate(zip(texts, confidences))]


def page_one() -> dict:
    prose = ["The arrays below are indexed by rows and columns. An index matrix",
             "selects irregular elements; this line was smudged in the scan",
             "and the last line reads cleanly again."]
    code_lines = _rows(160, 760, LISTING, width=980)
    regions = [
        _region(0, "header", [160, 60, 700, 92], _rows(160, 60, ["Chapter 5: Arrays and matrices"], width=540),
                [{"type": "paragraph", "text": "Chapter 5: Arrays and matrices", "lines": [0]}], role="header",
                source="text_layer"),
        _region(1, "text", [1040, 60, 1080, 92], _rows(1040, 60, ["21"], width=40),
                [{"type": "paragraph", "text": "21", "lines": [0]}], role="header", source="text_layer"),
        _region(2, "title", [160, 150, 700, 200], _rows(160, 150, ["5.3 Index matrices"], width=540),
                [{"type": "heading", "text": "5.3 Index matrices", "level": 2, "lines": [0]}]),
        _region(3, "text", [160, 240, 1080, 340], _rows(160, 240, prose, confidences=[0.96, 0.31, 0.93]),
                [{"type": "paragraph", "text": " ".join(prose), "lines": [0, 1, 2]}]),
        _region(4, "text", [160, 380, 1080, 450],
                [_line([160, 380, 1060, 406], "Verified reading: the mean is 4.2 units.", 0.88,
                       layer_text="Verified reading: the mean is 4.7 units."),
                 _line([160, 414, 1060, 440], "The layer agrees with the rest.", 0.95)],
                [{"type": "paragraph", "text": "Verified reading: the mean is 4.2 units.\nThe layer agrees with the rest.",
                  "lines": [0, 1]}], check="differs"),
        _region(5, "text", [160, 480, 1080, 520], _rows(160, 480, ["A paragraph the layer reads the same way."]),
                [{"type": "paragraph", "text": "A paragraph the layer reads the same way.", "lines": [0]}],
                check="agrees"),
        _region(6, "text", [160, 560, 1080, 600], _rows(160, 560, ["Read from the text layer after recognition failed."],
                                                          confidences=[None]),
                [{"type": "paragraph", "text": "Read from the text layer after recognition failed.", "lines": [0]}],
                status="fallback", source="text_layer", reason="recognition failed twice"),
        _region(7, "equation", [160, 640, 1080, 700], _rows(160, 640, ["\\int_0^1 x^2\\,dx = \\frac{1}{3}"]),
                [{"type": "equation", "text": "\\int_0^1 x^2\\,dx = \\frac{1}{3}", "lines": [0], "number": "2"}],
                task="formula"),
        _region(8, "text", [160, 760, 1140, 960], code_lines,
                [{"type": "code", "text": "\n".join(LISTING), "lines": list(range(len(LISTING))), "language": "r"}],
                source="text_layer"),
        _region(9, "table", [160, 1000, 1080, 1160], [], [{"type": "table", "text": SPANNING_TABLE, "lines": []}],
                task="table", text=SPANNING_TABLE),
        _region(10, "table_caption", [160, 1170, 1080, 1200], _rows(160, 1170, ["Table 1: Sales by region."]),
                [{"type": "caption", "text": "Table 1: Sales by region.", "lines": [0], "caption_of": 9}]),
        _region(11, "table", [160, 1240, 1080, 1400], [], [], task="table", status="failed",
                reason="the recogniser timed out", text=""),
        _region(12, "text", [160, 1440, 1080, 1480],
                _rows(160, 1440, ["Inline math such as $a^2 + b^2 = c^2$ stays in its sentence."]),
                [{"type": "paragraph", "text": "Inline math such as $a^2 + b^2 = c^2$ stays in its sentence.",
                  "lines": [0]}]),
        _region(13, "footer", [560, 1680, 680, 1710], _rows(560, 1680, ["Page 21"], width=120),
                [{"type": "paragraph", "text": "Page 21", "lines": [0]}], role="footer", source="text_layer"),
    ]
    return {"page": 1, "state": "done", "reason": "1 region could not be read", "width": WIDTH, "height": HEIGHT,
            "dpi": 150, "text_layer": None, "timings": {}, "regions": regions}


def page_two() -> dict:
    regions = [_region(0, "text", [160, 150, 1080, 190], _rows(160, 150, ["The second page reads cleanly."]),
                       [{"type": "paragraph", "text": "The second page reads cleanly.", "lines": [0]}])]
    return {"page": 2, "state": "done", "reason": None, "width": WIDTH, "height": HEIGHT, "dpi": 150,
            "text_layer": None, "timings": {}, "regions": regions}


FILENAME = "fabricated-arrays.pdf"


def job() -> dict:
    pages = [{"file": 1, "page": n, "state": "done", "reason": None, "attempts": 1, "lost_runs": 0,
              "regions_ok": 12, "regions_fallback": 1, "regions_failed": 1} for n in (1, 2)]
    return {"id": JOB_ID, "state": "done", "pages_done": 2, "pages_total": 2, "created_at": "2026-12-06T10:00:00Z",
            "updated_at": "2026-12-06T10:00:05Z", "finished_at": "2026-12-06T10:00:05Z", "error": None,
            "formats": ["md", "json"], "text_layer": "verify", "schema_name": None, "extraction": None,
            "files": [{"filename": FILENAME, "kind": "pdf", "num_pages": 2, "pages_selected": 2}], "pages": pages}


def result() -> dict:
    return {"job_id": JOB_ID, "created_at": "2026-12-06T10:00:00Z", "documents": [
        {"filename": FILENAME, "kind": "pdf", "num_pages": 2, "sha256": "0" * 64, "pages": [page_one(), page_two()]}]}


def page_image() -> bytes:
    """A page with grey bars where the regions' lines are, so boxes have something under them."""
    image = Image.new("RGB", (WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(image)
    for page_region in page_one()["regions"]:
        for line in page_region["lines"]:
            x0, y0, x1, y1 = line["bbox"]
            draw.rectangle([x0, y0 + 6, x1, y1 - 6], fill=(120, 120, 120))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def serve_fabricated_job(page: Page) -> str:
    """Answers this job's calls in `page`; returns the job id. Open it with `#job=ID` after signing in."""
    png = page_image()
    job_body, result_body = json.dumps(job()), json.dumps(result())

    def answer(route: Route) -> None:
        url = route.request.url
        if "/result?format=json" in url:
            route.fulfill(status=200, content_type="application/json", body=result_body)
        elif "/pages/" in url and url.endswith("/image"):
            route.fulfill(status=200, content_type="image/png", body=png)
        elif url.endswith(f"/v1/jobs/{JOB_ID}"):
            route.fulfill(status=200, content_type="application/json", body=job_body)
        else:
            route.fulfill(status=404, content_type="application/json",
                          body=json.dumps({"error": {"code": "not_found", "message": "not in the fabricated job"}}))

    page.route(f"**/v1/jobs/{JOB_ID}**", answer)
    return JOB_ID
