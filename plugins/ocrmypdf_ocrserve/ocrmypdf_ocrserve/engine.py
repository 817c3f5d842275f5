"""ocrserve as OCRmyPDF's OcrEngine.

What OCRmyPDF asks, and what it gets:

| OCRmyPDF calls                  | when                                  | this engine                               |
|---------------------------------|---------------------------------------|-------------------------------------------|
| `generate_ocr`                  | default renderer (fpdf2)              | the page pipeline's lines as an OcrElement tree (`ocr_tree.py`) |
| `generate_pdf`                  | `--pdf-renderer sandwich`             | a text-only page PDF from `workers.searchable_pdf.text_layer_pdf` |
| `generate_hocr`                 | only OCRmyPDF's private hOCR pipeline | refused with a clear error                |
| `get_orientation`, `get_deskew` | `--rotate-pages`, `--deskew`          | neutral: no rotation (confidence 0), no skew; the pipeline reads each line upright by its own angle |

Each call runs in an OCRmyPDF worker; the page is recognised there by the
worker's own pipeline (`page_reader.py`) on the run's shared engine.
"""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version as package_version
from pathlib import Path

from ocrmypdf.exceptions import ExitCodeException, SubprocessOutputError
from ocrmypdf.models.ocr_element import OcrElement
from ocrmypdf.pluginspec import OcrEngine, OrientationConfidence

# The house model reads English and other Latin-script text; `-l` must name English for the text
# OCRmyPDF records as the document's language to be true.
LANGUAGES = frozenset({"eng"})


def _ocrserve_version() -> str:
    try:
        return package_version("ocrserve")
    except PackageNotFoundError:   # a checkout on PYTHONPATH, not installed
        return "unknown"


class OcrserveEngine(OcrEngine):
    @staticmethod
    def version() -> str:
        return _ocrserve_version()

    @staticmethod
    def creator_tag(options) -> str:
        return f"ocrserve {_ocrserve_version()} (ocrmypdf-ocrserve)"

    def __str__(self) -> str:
        return f"ocrserve {_ocrserve_version()}"

    @staticmethod
    def languages(options) -> set[str]:
        return set(LANGUAGES)

    @staticmethod
    def get_orientation(input_file: Path, options) -> OrientationConfidence:
        return OrientationConfidence(angle=0, confidence=0.0)

    @staticmethod
    def get_deskew(input_file: Path, options) -> float:
        return 0.0

    @staticmethod
    def supports_generate_ocr() -> bool:
        return True

    @staticmethod
    def generate_ocr(input_file: Path, options, page_number: int = 0) -> tuple[OcrElement, str]:
        from ocrmypdf_ocrserve.ocr_tree import page_tree
        from ocrmypdf_ocrserve.page_reader import page_text

        page = _read(input_file, options)
        return page_tree(page, page_number), page_text(page)

    @staticmethod
    def generate_pdf(input_file: Path, output_pdf: Path, output_text: Path, options) -> None:
        from ocrmypdf_ocrserve.page_reader import page_text
        from ocrmypdf_ocrserve.sandwich import graftable
        from workers.searchable_pdf import text_layer_pdf

        page = _read(input_file, options)
        output_pdf.write_bytes(graftable(text_layer_pdf(page)))
        output_text.write_text(page_text(page), encoding="utf-8")

    @staticmethod
    def generate_hocr(input_file: Path, output_hocr: Path, output_text: Path, options) -> None:
        raise ExitCodeException("ocrmypdf-ocrserve gives OCRmyPDF its OCR as an OcrElement tree (the default "
                                "renderer) or a text-only PDF (--pdf-renderer sandwich), not as hOCR")


def _read(input_file: Path, options):
    del options   # what it says for ocrserve reached the workers as OCRSERVE_* (the plugin's `validate`)
    from ocrmypdf_ocrserve.page_reader import read_page
    from workers.recognizers.base import RecognizerUnavailableError

    try:
        return read_page(input_file)
    except RecognizerUnavailableError as exc:
        # the engine went away mid-run (it logs why); OCRmyPDF reports the page and stops
        raise SubprocessOutputError(f"ocrserve could not recognise {input_file.name}: {exc}") from exc
