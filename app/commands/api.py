"""`ocrserve api [--host H] [--port P]`: the REST API alone (workers run elsewhere).

With no API key configured the API is open, so it binds to loopback whatever
--host says, and says so.
"""
from __future__ import annotations

import argparse
import sys

from workers.settings import Settings

SUMMARY = "serve the REST API only (workers and engine run elsewhere)"
LOOPBACK = "127.0.0.1"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=None, help="address to bind (default: OCRSERVE_HOST, 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port (default: OCRSERVE_PORT, 8000)")
    parser.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("api", help=SUMMARY, description=SUMMARY)
    configure(parser)
    parser.set_defaults(handler=main)
    return parser


def bind_host(settings: Settings, requested: str | None) -> str:
    """The address to bind: loopback whenever no API key is configured."""
    from app.api_keys import KeyRing

    host = requested or settings.host
    if not KeyRing(settings.api_keys, settings.keys_file).is_configured and host not in (LOOPBACK, "localhost", "::1"):
        print(f"ocrserve: no API key is configured, so the API binds to {LOOPBACK} only, not {host}; "
              f"add one with `ocrserve keys add NAME` (or set OCRSERVE_API_KEYS) to serve other machines",
              file=sys.stderr)
        return LOOPBACK
    return host


def main(args: argparse.Namespace) -> int:
    import uvicorn

    from app.main import create_app

    settings = Settings()
    host = bind_host(settings, args.host)
    port = settings.port if args.port is None else args.port
    print(f"ocrserve api on http://{host}:{port} (data in {settings.data_dir.resolve()})", file=sys.stderr)
    uvicorn.run(create_app(settings), host=host, port=port, log_level=args.log_level, access_log=False,
                server_header=False)
    return 0


if __name__ == "__main__":
    from app.commands import run_as_script

    run_as_script("api")
