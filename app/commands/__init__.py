"""The `ocrserve` subcommands implemented in this package, one module each.

Every module has `SUMMARY`, `configure(parser)` (its arguments),
`add_parser(subparsers)` and `main(args) -> int`, and runs on its own with
`python -m app.commands.NAME ...`. Modules are imported only when their
command runs, so `ocrserve --help` stays light.
"""
from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS: dict[str, str] = {
    "serve": "API + worker (+ engine) in one command, embedded broker unless OCRSERVE_BROKER_URL is set",
    "api": "the REST API only (workers run elsewhere)",
    "worker": "a Celery worker running the document pipeline",
    "run": "OCR files and folders to Markdown/JSON/text/PDF, no server needed",
    "keys": "manage API keys (add NAME prints the key once; list; remove NAME)",
    "status": "the job store, the broker and the workers (as GET /health, with worker names)",
    "mcp": "an MCP server on stdio for agents (tools: OCR, extract, results); over HTTP it is /mcp of serve",
}


def build_parser(name: str) -> argparse.ArgumentParser:
    module = importlib.import_module(f"app.commands.{name}")
    parser = argparse.ArgumentParser(prog=f"ocrserve {name}", description=module.SUMMARY)
    module.configure(parser)
    return parser


def run_subcommand(name: str, argv: list[str]) -> int:
    """Parse `argv` for subcommand `name` and run it; its exit code."""
    assert name in SUBCOMMANDS, name
    args = build_parser(name).parse_args(argv)
    module = importlib.import_module(f"app.commands.{name}")
    return int(module.main(args))


def run_as_script(name: str) -> None:
    sys.exit(run_subcommand(name, sys.argv[1:]))
