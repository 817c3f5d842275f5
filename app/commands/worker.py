"""`ocrserve worker`: a Celery worker running the document pipeline.

Settings come from OCRSERVE_* variables (broker, data directory, recogniser).
Before taking work it checks the recogniser: a set-up that cannot work (a
text-only model behind the engine URL, Tesseract missing) stops it with the
reason; an engine that is not up yet only warns, since pages are retried.
"""
from __future__ import annotations

import argparse
import socket
import sys

from workers.settings import Settings

SUMMARY = "run a Celery worker for the document pipeline"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--concurrency", type=int, default=None,
                        help="pool processes (default: OCRSERVE_WORKER_CONCURRENCY)")
    parser.add_argument("--loglevel", default="warning", choices=("debug", "info", "warning", "error"))
    parser.add_argument("--skip-check", action="store_true", help="start without checking the recogniser")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("worker", help=SUMMARY, description=SUMMARY)
    configure(parser)
    parser.set_defaults(handler=main)
    return parser


def main(args: argparse.Namespace) -> int:
    from engine.server.parent_watch import exit_with_parent

    exit_with_parent()     # started by `ocrserve run`/`serve`: end with it, even if it is SIGKILLed
    settings = Settings()
    if not args.skip_check:
        from workers.recognizer import RecognizerConfigError, RecognizerUnavailableError, build_recognizer

        try:
            build_recognizer(settings).check()
        except RecognizerConfigError as exc:
            print(f"ocrserve worker: {exc}", file=sys.stderr)
            return 2
        except RecognizerUnavailableError as exc:
            print(f"ocrserve worker: warning: {exc}; pages will be retried until it answers", file=sys.stderr)
    from workers.celery_app import QUEUE
    from workers.tasks import celery_app

    concurrency = args.concurrency or settings.worker_concurrency
    celery_app.worker_main(["worker", "--pool", "prefork", "--concurrency", str(concurrency), "--queues", QUEUE,
                            "--loglevel", args.loglevel, "--hostname", f"ocrserve@{socket.gethostname()}",
                            "--without-gossip", "--without-mingle"])
    return 0


if __name__ == "__main__":
    from app.commands import run_as_script

    run_as_script("worker")
