"""`ocrserve worker`: a Celery worker running the document pipeline.

Settings come from OCRSERVE_* variables (broker, data directory, recogniser).
Before taking work it checks the recogniser: a set-up that cannot work (a
text-only model behind the engine URL, Tesseract missing) stops it with the
reason; an engine that is not up yet only warns, since pages are retried.

`--with-engine`: a worker host that runs its own engines, as `serve` does: the
recogniser's engine (when it is ours and OCRSERVE_ENGINE_URL is unset) and the
extraction engine, on loopback, with a key made now; they stop with the worker.
"""
from __future__ import annotations

import argparse
import os
import socket
import sys

from workers.settings import Settings

SUMMARY = "run a Celery worker for the document pipeline"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--concurrency", type=int, default=None,
                        help="pool processes (default: OCRSERVE_WORKER_CONCURRENCY)")
    parser.add_argument("--loglevel", default="warning", choices=("debug", "info", "warning", "error"))
    parser.add_argument("--skip-check", action="store_true", help="start without checking the recogniser")
    parser.add_argument("--with-engine", action="store_true",
                        help="start this host's own engines on loopback first (as `serve` does), unless "
                             "OCRSERVE_ENGINE_URL / OCRSERVE_EXTRACTION_URL point at shared ones")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("worker", help=SUMMARY, description=SUMMARY)
    configure(parser)
    parser.set_defaults(handler=main)
    return parser


def main(args: argparse.Namespace) -> int:
    from engine.server.parent_watch import exit_with_parent

    exit_with_parent()     # started by `ocrserve run`/`serve`: end with it, even if it is SIGKILLed
    settings = Settings()
    if not args.with_engine:
        return _run_worker(args, settings)
    from app.local_services import ServiceStartError, child_env, start_host_engines, with_engine_keys
    from workers.data_dir import DataDir

    settings = with_engine_keys(settings)
    try:
        settings, overrides, engines = start_host_engines(settings, DataDir(settings.data_dir).ensure().root, "worker")
    except ServiceStartError as exc:
        print(f"ocrserve worker: {exc}", file=sys.stderr)
        return 2
    try:
        # The tasks read their settings from the environment when Celery imports them.
        os.environ.update({key: value for key, value in child_env(settings, **overrides).items()
                           if key.startswith("OCRSERVE_")})
        return _run_worker(args, Settings())
    finally:
        for engine in reversed(engines):
            engine.stop()


def _run_worker(args: argparse.Namespace, settings: Settings) -> int:
    if not args.skip_check:
        from workers.recognizers.base import RecognizerConfigError, RecognizerUnavailableError
        from workers.recognizers.registry import build_recognizer

        try:
            build_recognizer(settings).check()
        except RecognizerConfigError as exc:
            print(f"ocrserve worker: {exc}", file=sys.stderr)
            return 2
        except RecognizerUnavailableError as exc:
            print(f"ocrserve worker: warning: {exc}; pages will be retried until it answers", file=sys.stderr)
    concurrency = args.concurrency or settings.worker_concurrency
    # workers.tasks reads its settings from the environment as it is imported (below): the same
    # concurrency, which the page processes share the cores by (`Settings.page_threads`)
    os.environ["OCRSERVE_WORKER_CONCURRENCY"] = str(concurrency)
    from workers.celery_app import QUEUE
    from workers.tasks import celery_app

    celery_app.worker_main(["worker", "--pool", "prefork", "--concurrency", str(concurrency), "--queues", QUEUE,
                            "--loglevel", args.loglevel, "--hostname", f"ocrserve@{socket.gethostname()}",
                            "--without-gossip", "--without-mingle"])
    return 0


if __name__ == "__main__":
    from app.commands import run_as_script

    run_as_script("worker")
