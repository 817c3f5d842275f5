"""`ocrserve run INPUT... --out DIR [--formats md,json,txt,pdf] [--pages 1-5] [--text-layer auto|never|verify]
[--keep-furniture] [--languages detect|pol+eng] [--schema S] [--force]`

The batch folder job, with no server running: it starts a private worker (and
our engine, when it is the recogniser) on loopback with an embedded broker in
a temporary data directory, submits every input as its own job, shows
progress (files and pages), writes each input's results as they finish,
prints a summary and stops what it started. Inputs already done (same bytes,
pages and formats; see `app.batch_inputs`) are skipped unless --force.

With --schema (a JSON schema file, or a registered name such as `invoice`)
each input also gets NAME.extraction.json: the fields, validated against the
schema, or the reason they could not be extracted. When extraction reads text
and no OCRSERVE_EXTRACTION_URL is set, our engine is started on loopback with
SmolLM2-135M-Instruct (or OCRSERVE_EXTRACTION_MODEL) for it. A failed
extraction is reported in the summary but does not change the exit status: the
OCR results are all there.

Exit status: 0 when every input was read, 1 when any input or page failed,
2 when nothing could start (bad arguments, a recogniser that cannot work).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from app.batch_inputs import BatchInput, BatchInputError, RunManifest, file_sha256, find_inputs
from workers.settings import Settings

if TYPE_CHECKING:
    from workers.extraction_schema import ExtractionSchema

SUMMARY = "OCR files and folders to Markdown/JSON/text/PDF without a server"
POLL_INTERVAL_S = 0.25
OWNER = "cli"
EXTRACTION_OUTPUT = "extraction.json"   # NAME.extraction.json, beside NAME.md
TEXT_LAYER_MODES = ("auto", "never", "verify")   # vision.text_layer's, named here so --help needs no PDF library


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="PDF/PNG/JPEG/TIFF files, office documents "
                        "(DOCX/ODT/RTF/PPTX/ODP/XLSX/ODS), HTML or EPUB files, or folders of them")
    parser.add_argument("--out", required=True, type=Path, help="output folder")
    parser.add_argument("--formats", default="md,json,txt,pdf",
                        help="comma-separated: md,json,txt,pdf,hocr,alto (hOCR and ALTO XML only when named)")
    parser.add_argument("--pages", default=None, help="pages of each input, e.g. 1-5,8 (pages past the end are skipped)")
    parser.add_argument("--dpi", type=float, default=None, help="render resolution for PDF pages")
    parser.add_argument("--text-layer", choices=TEXT_LAYER_MODES, default=None,
                        help="auto: a PDF page whose own text layer passes checks takes its text from it (exact, "
                             "fast); never: always recognise; verify: recognise such a page with its layer's text "
                             "as the model's draft (faster on our engine) and flag where they differ (default: "
                             "auto, or OCRSERVE_TEXT_LAYER)")
    parser.add_argument("--languages", default=None,
                        help="detect (default): find each page's script and language, and read what the house model "
                             "cannot write with Tesseract's pack for it; or Tesseract codes joined by '+', e.g. pol, "
                             "rus+eng, chi_sim (each pack installed: tesseract --list-langs)")
    parser.add_argument("--keep-furniture", action="store_true",
                        help="keep page furniture (running headers and footers, page numbers, line numbers, margin "
                             "notes) in the Markdown and text; the JSON always has it, marked by role")
    parser.add_argument("--schema", default=None,
                        help="also extract fields into NAME.extraction.json: a JSON schema file or a registered name")
    parser.add_argument("--force", action="store_true", help="redo inputs already done")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: OCRSERVE_WORKER_CONCURRENCY)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("run", help=SUMMARY, description=SUMMARY)
    configure(parser)
    parser.set_defaults(handler=main)
    return parser


@dataclass
class Tally:
    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)   # (input, reason)
    pages_ok: int = 0
    pages_fallback: int = 0
    pages_failed: int = 0
    extractions_failed: list[tuple[str, str]] = field(default_factory=list)   # (input, reason)


def main(args: argparse.Namespace) -> int:
    from workers.job_service import checked_languages, parse_formats
    from vision.limits import InputError

    try:
        formats = parse_formats(args.formats)
        args.languages = checked_languages(getattr(args, "languages", None), Settings().tesseract_cmd)
        items = find_inputs(args.inputs)
        extraction = _load_schema(args.schema) if getattr(args, "schema", None) else None
    except (BatchInputError, InputError) as exc:   # a bad schema is an InputError too
        print(f"ocrserve run: {exc}", file=sys.stderr)
        return 2
    out_dir: Path = args.out
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = RunManifest(out_dir)
    tally = Tally()
    todo: list[tuple[BatchInput, str]] = []
    outputs = formats + (EXTRACTION_OUTPUT,) if extraction else formats
    for item in items:
        sha256 = file_sha256(item.path)
        if not args.force and manifest.is_done(item, out_dir, sha256, args.pages, outputs) \
                and _same_schema(item, out_dir, extraction):
            tally.skipped.append(str(item.path))
        else:
            todo.append((item, sha256))
    if todo:
        code = _run_jobs(args, todo, formats, extraction, out_dir, manifest, tally)
        if code is not None:
            return code
    _print_summary(tally, len(items))
    return 1 if tally.failed or tally.pages_failed else 0


def _run_jobs(args: argparse.Namespace, todo: list[tuple[BatchInput, str]], formats: tuple[str, ...],
              extraction: ExtractionSchema | None, out_dir: Path, manifest: RunManifest,
              tally: Tally) -> int | None:
    from tqdm import tqdm

    from app.local_services import (EXTRACTION_ENGINE_ARGS, ServiceStartError, child_env, free_loopback_port,
                                    start_engine, start_worker, with_engine_keys)
    from vision.limits import InputError
    from workers.extraction_client import ExtractionEndpoint, starts_own_extraction_engine
    from workers.job_service import JobService, Upload
    from workers.recognizers.base import RecognizerConfigError, RecognizerUnavailableError
    from workers.recognizers.registry import build_recognizer

    tmp = Path(tempfile.mkdtemp(prefix="ocrserve-run-"))
    # Each engine started here requires a key (a random one unless configured); the worker is given it.
    settings = with_engine_keys(Settings(data_dir=tmp, broker_url=None))
    children = []
    worker = None
    try:
        if settings.starts_own_engine:
            # The engine's port is chosen here so the worker can start with its address and load
            # its own models while the engine loads (each takes seconds); jobs go in once it is up.
            port = free_loopback_port()
            settings = settings.model_copy(update={"engine_url": f"http://127.0.0.1:{port}/v1"})
            worker = start_worker(child_env(settings), args.workers or settings.worker_concurrency, tmp / "worker.log")
            children.append(worker)
            engine, engine_url = start_engine(settings, child_env(settings), port, tmp / "engine.log",
                                              api_key=settings.engine_api_key)
            children.append(engine)
            settings = settings.model_copy(update={"engine_url": engine_url})
        build_recognizer(settings).check()
        if extraction is not None and starts_own_extraction_engine(settings):
            endpoint = ExtractionEndpoint.from_settings(settings)
            engine, extraction_url = start_engine(settings, child_env(settings), 0, tmp / "extraction-engine.log",
                                                  extra_args=EXTRACTION_ENGINE_ARGS, model=endpoint.model,
                                                  api_key=endpoint.api_key)
            children.append(engine)
            settings = settings.model_copy(update={"extraction_url": extraction_url})
        service = JobService(settings)
        active: dict[str, tuple[BatchInput, str]] = {}
        for item, sha256 in todo:
            try:
                job = service.submit(OWNER, [Upload(item.path.name, item.path.read_bytes())], args.pages, formats,
                                     args.dpi, clamp_pages=True, extraction=extraction,
                                     text_layer=getattr(args, "text_layer", None),
                                     keep_furniture=getattr(args, "keep_furniture", False),
                                     languages=getattr(args, "languages", None))
            except InputError as exc:
                tally.failed.append((str(item.path), str(exc)))
                continue
            active[job.id] = (item, sha256)
        # Jobs wait in the embedded broker; a worker is started only when there is work.
        if active and worker is None:
            worker = start_worker(child_env(settings), args.workers or settings.worker_concurrency, tmp / "worker.log")
            children.append(worker)

        pages_done = {job_id: 0 for job_id in active}
        total_pages = sum(service.store.get_job(job_id).pages_total for job_id in active)  # type: ignore[union-attr]
        files_bar = tqdm(total=len(todo), desc="files", unit="file", disable=args.quiet or None, position=0)
        pages_bar = tqdm(total=total_pages, desc="pages", unit="page", disable=args.quiet or None, position=1)
        files_bar.update(len(todo) - len(active))
        while active:
            if not worker.is_running:
                raise ServiceStartError(f"the worker stopped unexpectedly; see {tmp / 'worker.log'}")
            time.sleep(POLL_INTERVAL_S)
            for job_id in list(active):
                job = service.store.get_job(job_id)
                assert job is not None
                pages_done[job_id] = job.pages_total if job.state.is_final else job.pages_done
                if job.state.is_final:
                    item, sha256 = active.pop(job_id)
                    _collect(service, job, item, sha256, args.pages, formats, out_dir, manifest, tally)
                    files_bar.update(1)
            pages_bar.update(sum(pages_done.values()) - pages_bar.n)
        files_bar.close()
        pages_bar.close()
    except (ServiceStartError, RecognizerConfigError, RecognizerUnavailableError) as exc:
        print(f"ocrserve run: {exc}", file=sys.stderr)
        for log in sorted(tmp.glob("*.log")):   # the temporary folder goes away: show the logs' ends now
            tail = log.read_text(errors="replace").splitlines()[-15:]
            print(f"--- {log.name} (last lines) ---", *tail, sep="\n", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ocrserve run: interrupted", file=sys.stderr)
        return 130
    finally:
        for child in reversed(children):
            child.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return None


def _collect(service, job, item: BatchInput, sha256: str, pages: str | None, formats: tuple[str, ...],
             out_dir: Path, manifest: RunManifest, tally: Tally) -> None:
    """Copy a finished job's results next to the others and count its pages."""
    from workers.document_result import render_markdown
    from workers.job_model import JobState

    if job.state is not JobState.DONE:
        tally.failed.append((str(item.path), job.error or f"the job ended {job.state.value}"))
        return
    for page in job.pages:
        if page.state.value == "failed":
            tally.pages_failed += 1
        elif page.regions_fallback or page.regions_failed:
            tally.pages_fallback += 1
        else:
            tally.pages_ok += 1
    result = json.loads(service.result_path(job, "json").read_text())
    target = item.output_path(out_dir, "md").parent
    target.mkdir(parents=True, exist_ok=True)
    figures = service.data_dir.figures_dir(job.id)
    if figures.is_dir() and any(figures.iterdir()):
        shutil.copytree(figures, item.figures_dir(out_dir), dirs_exist_ok=True)
    for fmt in formats:
        destination = item.output_path(out_dir, fmt)
        if fmt == "md":
            destination.write_text(render_markdown(result, figure_prefix=f"{item.figures_dir(out_dir).name}/",
                                                   keep_furniture=job.options.keep_furniture))
        elif fmt == "json":
            destination.write_text(json.dumps({**result, "source": str(item.path)}, ensure_ascii=False, indent=1))
        else:
            shutil.copyfile(service.result_path(job, fmt), destination)
    if job.options.extraction is not None:
        _collect_extraction(service, job, item, out_dir, tally)
    failed_pages = [p.page_number for p in job.pages if p.state.value == "failed"]
    if failed_pages:
        tally.failed.append((str(item.path), f"page(s) {', '.join(map(str, failed_pages))} could not be read: "
                                             f"{next(p.reason for p in job.pages if p.state.value == 'failed')}"))
    else:
        tally.done.append(str(item.path))
        extracted = job.options.extraction is not None and not any(p == str(item.path)
                                                                    for p, _ in tally.extractions_failed)
        manifest.record(item, sha256, pages, formats + (EXTRACTION_OUTPUT,) if extracted else formats)


def _collect_extraction(service, job, item: BatchInput, out_dir: Path, tally: Tally) -> None:
    """NAME.extraction.json: the job's extraction result, with the input's path."""
    source = service.result_path(job, "extraction")
    try:
        extraction = json.loads(source.read_text())
    except (OSError, ValueError):
        extraction = {"state": "failed", "reason": "the worker wrote no extraction result"}
    item.output_path(out_dir, EXTRACTION_OUTPUT).write_text(
        json.dumps({**extraction, "source": str(item.path)}, ensure_ascii=False, indent=1))
    if extraction.get("state") != "done":
        tally.extractions_failed.append((str(item.path), extraction.get("reason") or "unknown reason"))


def _load_schema(value: str) -> ExtractionSchema:
    """--schema: a JSON schema file (named by its stem), else a registered name or inline JSON."""
    from app.schemas_registry import SchemaRegistry, resolve_schema
    from workers.extraction_schema import SchemaError, parse_schema

    settings = Settings()
    path = Path(value)
    if path.suffix == ".json" and path.is_file():
        try:
            return parse_schema(path.read_bytes(), settings.max_schema_bytes, path.stem)
        except OSError as exc:
            raise SchemaError(f"{value}: cannot be read ({exc.strerror})") from None
    return resolve_schema(value, SchemaRegistry.from_settings(settings))


def _same_schema(item: BatchInput, out_dir: Path, extraction: ExtractionSchema | None) -> bool:
    """Without a schema, or when NAME.extraction.json was made with this very schema."""
    if extraction is None:
        return True
    try:
        written = json.loads(item.output_path(out_dir, EXTRACTION_OUTPUT).read_text())
    except (OSError, ValueError):
        return False
    return (written.get("schema") or {}).get("sha256") == extraction.sha256


def _print_summary(tally: Tally, num_inputs: int) -> None:
    print(f"ocrserve run: {num_inputs} input(s): {len(tally.done)} done, {len(tally.failed)} failed, "
          f"{len(tally.skipped)} skipped (already done); pages: {tally.pages_ok} ok, "
          f"{tally.pages_fallback} with text-layer fallback or unread regions, {tally.pages_failed} failed",
          file=sys.stderr)
    for path, reason in tally.failed:
        print(f"  failed: {path}: {reason}", file=sys.stderr)
    for path, reason in tally.extractions_failed:
        print(f"  extraction failed: {path}: {reason}", file=sys.stderr)


if __name__ == "__main__":
    from app.commands import run_as_script

    run_as_script("run")
