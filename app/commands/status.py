"""`ocrserve status`: the job store, the broker and the workers, as `GET /health` reports them
(plus the workers' names), from the settings this machine's services read (OCRSERVE_*); under
a running `ocrserve serve`, also the children it supervises (worker, engines).

Exit code 0 when the job store and the broker answer and no supervised child is down, else 1. `--json`
prints the report as JSON.
"""
from __future__ import annotations

import argparse
import json

from workers.settings import Settings

SUMMARY = "report the job store, the broker and the workers (as GET /health, with worker names)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds each check may take (default 2)")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("status", help=SUMMARY, description=SUMMARY)
    configure(parser)
    parser.set_defaults(handler=main)
    return parser


def main(args: argparse.Namespace) -> int:
    from workers.job_service import JobService
    from workers.service_status import check_services

    if args.timeout <= 0:
        raise SystemExit("ocrserve status: --timeout must be positive")
    settings = Settings()
    try:
        service = JobService(settings)
    except Exception:   # noqa: BLE001 - the store cannot be reached (or migrated): the report says how
        service = JobService(settings, migrate_schema=False)
    status = check_services(service, timeout_s=args.timeout)
    report = status.to_dict(with_worker_names=True)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"status:    {report['status']}")
        print(f"database:  {_line(report['database'], 'jobs_active', 'jobs queued or running')}")
        print(f"broker:    {_line(report['broker'])}")
        workers = report["workers"]
        if workers.get("count") is None:
            print(f"workers:   unknown ({workers.get('detail', '')})")
        else:
            print(f"workers:   {workers['count']}" + (f" ({', '.join(workers['names'])})" if workers["names"] else ""))
        for name, child in report.get("children", {}).items():
            print(f"{name + ':':<10} {_child_line(child)}")
    return 0 if status.ok else 1


def _child_line(child: dict) -> str:
    """A child `serve` supervises: running (and how often it was restarted), or DOWN and why."""
    restarts = f", restarted {child['restarts']} time(s)" if child.get("restarts") else ""
    return ("running" if child["ok"] else f"DOWN: {child.get('detail', '')}") + restarts


def _line(check: dict, count_key: str | None = None, count_label: str = "") -> str:
    state = "ok" if check["ok"] else f"DOWN: {check.get('detail', '')}"
    extra = f", {check[count_key]} {count_label}" if count_key and check.get(count_key) is not None else ""
    return f"{check.get('kind', '')} {state}{extra}".strip()


if __name__ == "__main__":
    from app.commands import run_as_script

    run_as_script("status")
