"""ocrserve as OCRmyPDF's OCR engine:

    ocrmypdf --plugin ocrmypdf_ocrserve input.pdf output.pdf

OCRmyPDF keeps doing what it does (rasterising, PDF/A, optimising, grafting
the text under the page); each page image it would give Tesseract goes through
ocrserve's page pipeline instead (layout, line detection, the house recogniser
on our engine), and the lines come back with their boxes as OCRmyPDF's
OcrElement tree. The hooks, in the order OCRmyPDF calls them:

| hook               | process | does                                                         |
|--------------------|---------|--------------------------------------------------------------|
| `initialize`       | main    | keeps the engine client's request log off OCRmyPDF's console |
| `register_options`, `add_options` | main | `--ocrserve-*` (options.py)                    |
| `check_options`    | main    | validates them, and ocrserve's own OCRSERVE_* settings       |
| `validate`         | main    | picks the engine: the one named, else starts one for the run (shared_engine.py), checks it answers; sets each worker's threads |
| `get_ocr_engine`   | any     | `OcrserveEngine` (engine.py) unless `--ocr-engine` names another |

This package is ocrserve's client: ocrserve never imports it.
"""
from __future__ import annotations

import logging
import os
import secrets

from ocrmypdf import hookimpl
from ocrmypdf.exceptions import BadArgsError, MissingDependencyError

from ocrmypdf_ocrserve.engine import OcrserveEngine
from ocrmypdf_ocrserve.options import NAMESPACE, OcrserveOptions, check_engine_url, check_threads


@hookimpl
def initialize(plugin_manager):
    # httpx logs every engine request at INFO, which OCRmyPDF's console would show page by page
    logging.getLogger("httpx").setLevel(logging.WARNING)


@hookimpl
def register_options():
    return {NAMESPACE: OcrserveOptions}


@hookimpl
def add_options(parser):
    OcrserveOptions.add_arguments_to_parser(parser)


@hookimpl
def check_options(options):
    if getattr(options, "ocr_engine", "auto") != "auto":
        return
    plugin = options.ocrserve
    if plugin.engine_url is not None:
        check_engine_url(plugin.engine_url)
    check_threads(plugin.threads)
    _settings(plugin.engine_url)   # OCRSERVE_* from the environment, refused here with their reasons


@hookimpl
def validate(pdfinfo, options):
    if getattr(options, "ocr_engine", "auto") != "auto":
        return
    from app.local_services import ServiceStartError
    from ocrmypdf_ocrserve.shared_engine import with_engine
    from workers.recognizers.base import RecognizerConfigError, RecognizerUnavailableError
    from workers.recognizers.registry import build_recognizer

    plugin = options.ocrserve
    if not os.environ.get("OCRSERVE_TENANT_SECRET"):
        # Pages are read under no owner, so no request carries a prefix-cache tenant and the secret
        # keys nothing; one made for the run keeps ocrserve from writing its data directory
        # (./ocrserve-data, where the secret is kept by default) into the user's working folder.
        os.environ["OCRSERVE_TENANT_SECRET"] = secrets.token_hex(32)
    settings = _settings(plugin.engine_url)
    try:
        settings = with_engine(settings)
        build_recognizer(settings).check()
    except ServiceStartError as exc:
        raise MissingDependencyError(f"ocrserve's engine did not start: {exc}") from exc
    except (RecognizerConfigError, RecognizerUnavailableError) as exc:
        raise MissingDependencyError(f"ocrserve's recogniser cannot work: {exc}") from exc
    threads = plugin.threads
    if threads is None:
        # OCRmyPDF runs min(pages, --jobs) workers; its engine "should not introduce more parallelism",
        # so the workers share the cores (as it limits Tesseract's OpenMP threads).
        workers = max(1, min(len(pdfinfo), options.jobs or os.cpu_count() or 1))
        threads = max(1, (os.cpu_count() or 1) // workers)
    # The workers read their settings from the environment, as ocrserve's own children do: every way
    # OCRmyPDF starts them (fork, spawn, threads) passes it on, and the engine's key stays out of
    # OCRmyPDF's options, which it serialises.
    for name, value in (("ENGINE_URL", settings.engine_url), ("ENGINE_API_KEY", settings.engine_api_key),
                        ("VISION_NUM_THREADS", str(threads))):
        if value:
            os.environ[f"OCRSERVE_{name}"] = value


@hookimpl
def get_ocr_engine(options):
    if options is not None and getattr(options, "ocr_engine", "auto") != "auto":
        return None   # --ocr-engine tesseract / none: OCRmyPDF's own
    return OcrserveEngine()


def _settings(engine_url: str | None):
    from pydantic import ValidationError

    from workers.settings import Settings

    try:
        return Settings(**({"engine_url": engine_url} if engine_url else {}))
    except ValidationError as exc:
        problems = "; ".join(f"OCRSERVE_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors())
        raise BadArgsError(f"ocrserve's settings are not valid: {problems}") from None
