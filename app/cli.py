"""The `ocrserve` console script.

Subcommands import their implementation only when they run, so importing
`app` (or `ocrserve --version`) never pulls in torch.
"""
from __future__ import annotations

import argparse
import sys

from app.commands import SUBCOMMANDS, run_subcommand

VERSION = "0.1.0"
COMMANDS = {
    "engine": "serve a model with the ocrserve engine (OpenAI-compatible API); see `ocrserve engine --help`",
    **SUBCOMMANDS,
}


def build_parser() -> argparse.ArgumentParser:
    commands = "\n".join(f"  {name:<10} {summary}" for name, summary in COMMANDS.items())
    return argparse.ArgumentParser(
        prog="ocrserve", usage="ocrserve [--version] COMMAND [ARGS...]",
        description=f"Self-hosted document-OCR appliance.\n\ncommands:\n{commands}",
        formatter_class=argparse.RawDescriptionHelpFormatter)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "engine":
        from engine.server.main import main as engine_main   # lazy: pulls in torch

        return engine_main(argv[1:])
    if argv and argv[0] in SUBCOMMANDS:
        return run_subcommand(argv[0], argv[1:])
    parser = build_parser()
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("command", nargs="?", help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args(argv)
    if args.version:
        print(f"ocrserve {VERSION}")
        return 0
    if args.command is not None:
        parser.error(f"unknown command {args.command!r}; commands: {', '.join(COMMANDS)}")
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
