"""The plugin's options: `--ocrserve-*` on OCRmyPDF's command line, `options.ocrserve` inside.

| option                       | default                                   | what                                  |
|------------------------------|-------------------------------------------|---------------------------------------|
| `--ocrserve-engine-url URL`  | OCRSERVE_ENGINE_URL, else one started     | an ocrserve engine already running (its `.../v1`); its key only from OCRSERVE_ENGINE_API_KEY, never the command line |
| `--ocrserve-threads N`       | this machine's cores / OCRmyPDF's workers | threads of each worker's layout and line models |

Everything else ocrserve reads from its OCRSERVE_* environment, as `ocrserve
run` does (OCRSERVE_RECOGNIZER, OCRSERVE_ENGINE_MODEL, vision caps...).
"""
from __future__ import annotations

from urllib.parse import urlsplit

from ocrmypdf.exceptions import BadArgsError
from pydantic import BaseModel

NAMESPACE = "ocrserve"
MAX_THREADS = 64


class OcrserveOptions(BaseModel):
    engine_url: str | None = None
    threads: int | None = None   # checked in check_options (check_threads), where the refusal can name the flag

    @classmethod
    def add_arguments_to_parser(cls, parser) -> None:
        group = parser.add_argument_group("ocrserve", "ocrserve as the OCR engine (plugin ocrmypdf_ocrserve)")
        group.add_argument(f"--{NAMESPACE}-engine-url", dest=f"{NAMESPACE}_engine_url", metavar="URL",
                           help="an ocrserve engine already running, e.g. http://127.0.0.1:8001/v1 (its key from "
                                "OCRSERVE_ENGINE_API_KEY); default: OCRSERVE_ENGINE_URL, else one is started "
                                "for this run")
        group.add_argument(f"--{NAMESPACE}-threads", dest=f"{NAMESPACE}_threads", metavar="N", type=int,
                           help="threads of each OCRmyPDF worker's layout and line models (default: this "
                                "machine's cores shared among the workers)")


def check_engine_url(url: str) -> None:
    """An http(s) URL with a host: anything else is refused before a page is read."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadArgsError(f"--ocrserve-engine-url {url!r}: expected an http:// or https:// URL with a host, "
                           f"such as http://127.0.0.1:8001/v1")
    if parts.username or parts.password:
        raise BadArgsError("--ocrserve-engine-url must not carry credentials (the command line is visible to "
                           "every local user); give the engine's key in OCRSERVE_ENGINE_API_KEY")


def check_threads(threads: int | None) -> None:
    if threads is not None and not 1 <= threads <= MAX_THREADS:
        raise BadArgsError(f"--ocrserve-threads {threads}: expected a whole number from 1 to {MAX_THREADS}")
