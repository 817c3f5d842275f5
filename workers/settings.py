"""Every setting of the service (API, workers, batch CLI), in one place, read
from `OCRSERVE_*` environment variables.

The clocks on a page's path, all set here (DESIGN invariant 7):

| setting | what it bounds |
|---|---|
| engine_timeout_s | one recognition request to the engine, connect to last byte |
| engine_connect_timeout_s | opening a connection to the engine |
| page_time_limit_s | one page task (soft limit; the hard limit is 10 s later) |
| job_time_limit_s | the per-document task that fans out pages, and the one that writes results |
| broker_visibility_timeout_s | Redis: a task taken by a worker that died is redelivered after this |
| extraction_timeout_s | one schema-extraction request, connect to last byte (it runs inside the job's finish task) |
| extraction_connect_timeout_s | opening a connection to the extraction endpoint (refused connections are retried) |

`broker_visibility_timeout_s` must stay above the page hard time limit, or a
page still running could be handed to a second worker, and an extraction with
its retries must fit in the finish task's time limit; `Settings` refuses
values that break either.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from vision.limits import VisionLimits

HARD_LIMIT_GRACE_S = 10
HOUSE_MODEL = "house-ocr"   # the engine's built-in name for the house OCR model
DEFAULT_FORMATS = ("md", "json", "txt", "pdf")
ALL_FORMATS = DEFAULT_FORMATS + ("hocr", "alto")   # hOCR and ALTO XML (workers/export_*.py) when asked for
EXTRACTION_RETRY_BACKOFF_S = 2.0   # before the first retry of an unreachable extraction endpoint; doubles


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="OCRSERVE_", extra="ignore", frozen=True)

    # Where uploads, results, the job store and the embedded broker live.
    data_dir: Path = Path("ocrserve-data")

    # The job store: unset, the SQLite file in data_dir; `postgresql://user:password@host:5432/db` to
    # share one store between hosts (workers/database.py).
    database_url: str | None = None
    # Where files every host needs (uploads, page PDFs, figures, outputs) are shared: `local`, the data
    # directory (one host, or a volume every host mounts); `database`, the job store's database
    # (workers/blob_store.py), for hosts that share nothing but it and the broker.
    blob_store: Literal["local", "database"] = "local"

    # Queue. Unset: an embedded SQLite broker and result backend in data_dir.
    broker_url: str | None = None
    broker_visibility_timeout_s: int = Field(1800, ge=10)

    # API.
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    api_keys: str | None = None          # comma-separated keys, for quick set-ups and tests
    api_keys_file: Path | None = None    # `name:sha256` lines; default data_dir/api-keys
    # `keys`: every request needs a key (refused, never anonymous, if none can be read); `none`: open,
    # loopback only; `auto`: decided once at start-up, `keys` when a key or a keys file exists.
    auth: Literal["auto", "keys", "none"] = "auto"
    allowed_hosts: str | None = None     # comma-separated Host names accepted besides loopback and `host`
    # Hosts a document URL may name (the MCP server's ocr_url tool, app/url_intake.py): comma-separated names;
    # unset, no URL is fetched. No redirect is followed; the byte cap is max_upload_bytes.
    document_url_hosts: str | None = None
    document_url_timeout_s: float = Field(60.0, gt=0, le=3600)   # one URL fetch, connect to last byte
    # Swagger UI at /docs and ReDoc at /redoc (app/api_docs.py); off, since they run on the origin where the
    # web page keeps its key. /openapi.json is served either way.
    api_docs: bool = False
    max_files_per_job: int = Field(20, ge=1)
    max_jobs_listed: int = Field(100, ge=1)
    # Uploads this API process receives at once (each streamed to disk); the next gets 503 + Retry-After.
    max_concurrent_uploads: int = Field(4, ge=1)
    # An upload that sends nothing for this long is ended (408) and its slot freed: a client that
    # stalls mid-body (slow-loris) cannot hold the upload slots for ever.
    upload_idle_timeout_s: float = Field(30.0, gt=0, le=3600)
    # Results one key downloads at once from this API process; the next gets 429 + Retry-After.
    max_concurrent_downloads_per_key: int = Field(4, ge=1)
    # A download whose client takes nothing for this long is ended and its slot freed (app/downloads.py).
    download_idle_timeout_s: float = Field(30.0, gt=0, le=3600)
    # First renders of page images for the web page at once (each stored, then served from disk).
    max_concurrent_page_renders: int = Field(2, ge=1)

    # Document caps (checked before any heavy work) and rendering.
    max_upload_bytes: int = Field(100 * 1024 * 1024, ge=1)
    max_pages: int = Field(1000, ge=1)
    max_page_pixels: int = Field(16_000_000, ge=1)
    # 200, not 150: at 150 DPI the line detector boxes 8-pt print badly (both recognisers lose it),
    # and the house model is no slower at 200 (its draft is right more often): docs/BENCHMARKS.md.
    render_dpi: float = Field(200.0, gt=0, le=600)
    # An office, HTML or EPUB document's conversion to PDF at submit (vision/office.py) is stopped
    # past this, its whole process tree killed, and the upload refused (422 conversion_failed).
    conversion_timeout_s: float = Field(120.0, gt=0, le=3600)

    # Recognition. `house`: the house OCR model (shipped in this repository) on our engine, reading
    # one detected line per crop; `openai`: any OpenAI-compatible VLM endpoint (GLM-OCR, Qwen2-VL),
    # reading lines and whole regions; `tesseract`: the Tesseract program.
    recognizer: Literal["house", "openai", "tesseract"] = "house"
    engine_url: str | None = None        # unset: our engine on loopback (started by `serve` and `run`)
    engine_port: int = Field(30000, ge=0, le=65535)
    engine_model: str = "smollm2-135m"   # what the `openai` recogniser asks for (`house` always asks house-ocr)
    engine_api_key: str | None = None
    # Keys the engine's prefix-cache tenants (workers/tenant.py: HMAC of the job owner), so a client holding
    # only the engine key cannot name another owner's tenant. Unset: one made once in data_dir/tenant-secret;
    # set it where workers share no data directory.
    tenant_secret: SecretStr | None = None
    engine_timeout_s: float = Field(120.0, gt=0)
    engine_connect_timeout_s: float = Field(5.0, gt=0)
    recognizer_max_concurrency: int = Field(48, ge=1)   # a page's lines in flight at once, so the engine batches them
    # The engine's loop guard on OCR requests (engine/loop_guard.py): a reading that repeats itself past
    # its limits is stopped and its line marked `truncated_repetition`. Other servers ignore the field.
    loop_guard: bool = True
    tesseract_cmd: str = "tesseract"
    tesseract_lang: str = "eng"
    # A job's text-layer mode unless it names one: `auto` takes a born-digital PDF page's own text
    # when it passes its checks (vision/text_layer.py), `never` always recognises, `verify`
    # recognises such a page with its layer's text as the model's draft.
    text_layer: Literal["auto", "never", "verify"] = "auto"

    # Schema extraction, for jobs sent with a schema. Route "auto": "vision" (page images to the
    # recogniser's VLM) when the recogniser is `openai`, else "text" (recognised text to a text LLM).
    schemas_dir: Path | None = None      # registered schemas (NAME.json), listed beside the shipped examples
    max_schema_bytes: int = Field(64 * 1024, ge=256)
    extraction_route: Literal["auto", "text", "vision"] = "auto"
    extraction_url: str | None = None    # unset: text -> our engine on loopback; vision -> the recogniser's URL
    extraction_port: int = Field(30001, ge=0, le=65535)
    extraction_model: str | None = None  # unset: smollm2-135m (text) or engine_model (vision)
    extraction_api_key: str | None = None
    extraction_timeout_s: float = Field(120.0, gt=0)
    extraction_connect_timeout_s: float = Field(5.0, gt=0)
    extraction_retries: int = Field(2, ge=0, le=5)
    extraction_max_input_chars: int = Field(6000, ge=100)   # text route: longer documents are cut, with a note
    extraction_max_pages: int = Field(4, ge=1)              # vision route: the first pages of each document
    extraction_max_tokens: int = Field(1024, ge=16)
    # Unset: 0.5 on the text route, whose small default model otherwise repeats array items up to
    # maxItems; 0 on the vision route, where a strong model reads long tables of alike rows.
    extraction_frequency_penalty: float | None = Field(None, ge=0.0, le=2.0)

    # Workers.
    worker_concurrency: int = Field(2, ge=1)
    # Threads of each page process's vision models, OpenCV and OpenBLAS (`page_threads`). Unset:
    # cores / worker_concurrency, the process's share. Two page processes with two threads each of
    # onnxruntime, OpenCV and OpenBLAS on a 2-core machine took 10-14% more CPU for the same pages
    # (docs/BENCHMARKS.md, "Threads", 2026-12-07).
    vision_num_threads: int | None = Field(None, ge=1)
    # torch threads of an engine `serve`, `run` or `worker --with-engine` starts. Unset: torch's own
    # choice (every core): the engine runs while the page processes wait on it, and one thread there
    # cost more CPU and wall time, not less (the same section).
    engine_num_threads: int | None = Field(None, ge=1)
    # Recognised lines' word boxes aligned on the line image (vision/ctc_align.py: one PP-OCRv4 recogniser pass
    # per line of two words or more, ~1.7x the house encoder's CPU per line); off (the default), they are
    # interpolated by character widths. Either way their edges then move onto the line's ink gaps
    # (workers/ink_gaps.py), which on clean print makes the two as good (tests/workers/test_word_boxes.py).
    word_alignment: bool = False
    # Regions of handwriting marked as such, their lines' confidence capped (workers/pipeline/handwriting.py).
    # Off by default: the classifier (vision/handwriting.py) marks ~5% of text regions on real typeset pages
    # (code listings, mathematics; bench/handwriting.py --printed) and misses half of unseen hands.
    mark_handwriting: bool = False
    page_max_retries: int = Field(3, ge=0, le=10)
    page_retry_backoff_s: int = Field(2, ge=1)
    page_time_limit_s: int = Field(600, ge=5)
    job_time_limit_s: int = Field(300, ge=5)
    # Jobs that end. A page whose run was lost this many times (its worker process died or was
    # killed mid-page) is failed with its text-layer fallback instead of being run again.
    page_max_lost_runs: int = Field(3, ge=1, le=20)
    max_pages_per_job: int = Field(2000, ge=1)             # refused at submission above this
    # Fair share: pages of one key sent to the broker and not yet recorded; the next are sent as these end.
    max_pages_in_flight_per_key: int = Field(8, ge=1)
    recovery_interval_s: int = Field(60, ge=1)             # each worker's sweep: unsent jobs, lost pages, retention
    job_retention_days: float = Field(30.0, ge=0)          # finished jobs older than this are deleted; 0 keeps them

    # Webhooks (workers/webhooks.py): hosts and networks a job's callback_url may reach (workers/webhook_urls.py;
    # unset: webhooks off), and how each delivery is tried.
    webhook_allowed_hosts: str | None = None
    webhook_timeout_s: float = Field(10.0, gt=0, le=120)
    webhook_max_attempts: int = Field(6, ge=1, le=20)
    webhook_retry_backoff_s: float = Field(10.0, gt=0)   # before the 2nd attempt; doubles, with jitter
    webhook_poll_interval_s: float = Field(0.5, gt=0)    # how often a worker looks for due deliveries
    # Live progress (app/routes_events.py): streams one key holds open at once in this API process (the next
    # gets 429), how often a stream reads the job's new events, and its keep-alive comment interval.
    max_event_streams_per_key: int = Field(4, ge=1)
    event_stream_poll_s: float = Field(0.5, gt=0, le=10)
    event_stream_keepalive_s: float = Field(15.0, gt=0)

    @model_validator(mode="after")
    def _check_clocks(self) -> Settings:
        if self.broker_visibility_timeout_s <= self.page_time_limit_s + HARD_LIMIT_GRACE_S:
            raise ValueError(
                f"OCRSERVE_BROKER_VISIBILITY_TIMEOUT_S ({self.broker_visibility_timeout_s}) must exceed the page "
                f"hard time limit ({self.page_time_limit_s + HARD_LIMIT_GRACE_S} s), or running pages get redelivered")
        if self.extraction_worst_case_s >= self.job_time_limit_s:
            raise ValueError(
                f"an extraction may take {self.extraction_worst_case_s:.0f} s (OCRSERVE_EXTRACTION_TIMEOUT_S plus "
                f"retries), which must stay under OCRSERVE_JOB_TIME_LIMIT_S ({self.job_time_limit_s} s)")
        if self.blob_store == "database" and self.database_url is None:
            raise ValueError("OCRSERVE_BLOB_STORE=database keeps files in the job store's database: set "
                             "OCRSERVE_DATABASE_URL to a PostgreSQL database every host can reach")
        if self.database_url is not None:
            from workers.database import database_url

            try:
                database_url(self.database_url)
            except Exception as exc:
                raise ValueError(f"OCRSERVE_DATABASE_URL: {exc}") from None
        return self

    @property
    def extraction_worst_case_s(self) -> float:
        """One extraction request plus its retries of refused connections, with their backoff."""
        backoff_s = sum(EXTRACTION_RETRY_BACKOFF_S * 2 ** attempt for attempt in range(self.extraction_retries))
        return self.extraction_timeout_s + self.extraction_retries * self.extraction_connect_timeout_s + backoff_s

    @property
    def job_store_location(self) -> str | Path:
        """The job store's database: OCRSERVE_DATABASE_URL, or the SQLite file in the data directory."""
        return self.database_url or self.data_dir / "jobs.sqlite"

    @property
    def uses_embedded_broker(self) -> bool:
        return not self.broker_url

    @property
    def engine_base_url(self) -> str:
        """The OpenAI-compatible base URL, ending in /v1."""
        url = self.engine_url or f"http://127.0.0.1:{self.engine_port}/v1"
        url = url.rstrip("/")
        return url if url.endswith("/v1") else url + "/v1"

    @property
    def page_threads(self) -> int:
        """Threads each page process gives its vision models."""
        return self.vision_num_threads or share_of_cores(self.worker_concurrency)

    @property
    def starts_own_engine(self) -> bool:
        """`serve` and `run` start our engine when it is the recogniser's endpoint and none is configured."""
        return self.recognizer in ("house", "openai") and not self.engine_url

    @property
    def recognizer_model(self) -> str:
        """The model the recogniser's endpoint serves."""
        return HOUSE_MODEL if self.recognizer == "house" else self.engine_model

    @property
    def keys_file(self) -> Path:
        return self.api_keys_file or self.data_dir / "api-keys"

    def vision_limits(self) -> VisionLimits:
        return VisionLimits(max_upload_bytes=self.max_upload_bytes, max_pages=self.max_pages,
                            max_page_pixels=self.max_page_pixels, render_dpi=self.render_dpi,
                            conversion_timeout_s=self.conversion_timeout_s)


def host_cores() -> int:
    """The cores this process may run on (a container's or taskset's share, not the machine's)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def share_of_cores(processes: int) -> int:
    """Threads for each of `processes` that share this host's cores, at least one."""
    return max(1, host_cores() // processes)
