"""`ocrserve api [--host H] [--port P]`: the REST API alone (workers run elsewhere).

The auth mode is decided once, here at start-up (`OCRSERVE_AUTH`, see
app/api_keys.py): in `none` mode (the default when no key exists) the API is
open, so it binds to loopback whatever --host says, and says so. In `keys` mode
it never opens up while running: with its keys gone every request is refused.
"""
from __future__ import annotations

import argparse
import sys

from workers.settings import Settings

SUMMARY = "serve the REST API only (workers and engine run elsewhere)"
LOOPBACK = "127.0.0.1"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=None, help="address to bind (default: OCRSERVE_HOST, 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port (default: OCRSERVE_PORT, 8000)")
    parser.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("api", help=SUMMARY, description=SUMMARY)
    configure(parser)
    parser.set_defaults(handler=main)
    return parser


def with_auth_decided(settings: Settings) -> Settings:
    """`settings` with its auth mode pinned to `keys` or `none`, decided once, now (never again
    while the process runs), so the bind address and the app agree on it."""
    from app.api_keys import KeyRing

    return settings.model_copy(update={"auth": KeyRing.from_settings(settings).mode})


def bind_host(settings: Settings, requested: str | None) -> str:
    """The address to bind: loopback whenever the API runs without keys (auth mode `none`)."""
    from app.api_keys import KeyRing

    host = requested or settings.host
    if KeyRing.from_settings(settings).is_open and host not in LOOPBACK_HOSTS:
        print(f"ocrserve: no API key is configured, so the API binds to {LOOPBACK} only, not {host} "
              f"(auth mode 'none'); add one with `ocrserve keys add NAME` (or set OCRSERVE_API_KEYS) and "
              f"restart to serve other machines", file=sys.stderr)
        return LOOPBACK
    return host


def start_up(args: argparse.Namespace) -> tuple[Settings, str, int]:
    """What `api` and `serve` decide before serving: the settings with the auth mode pinned, and
    the address and port to bind (`--host`/`--port`, else OCRSERVE_HOST/OCRSERVE_PORT)."""
    settings = with_auth_decided(Settings())
    host = bind_host(settings, args.host)
    return settings, host, settings.port if args.port is None else args.port


def run_api(settings: Settings, host: str, port: int, log_level: str) -> None:
    """Serve the API on `host:port` until stopped; it answers only Host names that address allows."""
    import uvicorn

    from app.main import create_app

    uvicorn.run(create_app(settings, bound_host=host), host=host, port=port, log_level=log_level,
                access_log=False, server_header=False)


def main(args: argparse.Namespace) -> int:
    settings, host, port = start_up(args)
    print(f"ocrserve api on http://{host}:{port} (data in {settings.data_dir.resolve()})", file=sys.stderr)
    run_api(settings, host, port, args.log_level)
    return 0


if __name__ == "__main__":
    from app.commands import run_as_script

    run_as_script("api")
