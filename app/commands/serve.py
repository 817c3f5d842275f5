"""`ocrserve serve [--host H] [--port 8000]`: API + worker (+ engine) in one command.

- Broker: embedded SQLite in the data directory unless OCRSERVE_BROKER_URL is set.
- Engine: started on loopback when the recogniser is ours (OCRSERVE_RECOGNIZER=openai
  and no OCRSERVE_ENGINE_URL); its model must accept images, which is checked
  before the API opens.
- Engines run with a key: OCRSERVE_ENGINE_API_KEY (OCRSERVE_EXTRACTION_API_KEY for the
  extraction engine), or a random internal key made at start-up and handed to the worker
  through its environment.
- The auth mode is decided once, at start-up (app/api_keys.py); with no API key
  configured the API is open, binds to loopback only and says so.
- Children are supervised (app/supervisor.py): one that dies is started again with backoff,
  and GET /health and `ocrserve status` say `degraded`, with the reason, until it is back.
Ctrl-C (or SIGTERM) stops the API, then the worker, then the engine.
"""
from __future__ import annotations

import argparse
import signal
import sys

from app.commands.api import configure, run_api, start_up

SUMMARY = "run the API, a worker and (when it is ours) the engine in one command"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("serve", help=SUMMARY, description=SUMMARY)
    configure(parser)
    parser.set_defaults(handler=main)
    return parser


def main(args: argparse.Namespace) -> int:
    from app.local_services import ServiceStartError, child_env, start_host_engines, start_worker, with_engine_keys
    from app.supervisor import Supervisor
    from workers.data_dir import DataDir
    from workers.recognizers.base import RecognizerConfigError, RecognizerUnavailableError
    from workers.recognizers.registry import build_recognizer

    settings, host, port = start_up(args)
    settings = with_engine_keys(settings)
    data_dir = DataDir(settings.data_dir).ensure()
    children = []
    supervisor = None
    # SIGTERM unwinds like Ctrl-C, so the children are always stopped.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        settings, overrides, engines = start_host_engines(settings, data_dir.root, "serve")
        children.extend(engines)
        build_recognizer(settings).check()
        worker = start_worker(child_env(settings, **overrides), settings.worker_concurrency,
                              data_dir.root / "worker.log")
        children.append(worker)
        # From here on a child that dies is started again, and /health says so meanwhile.
        supervisor = Supervisor(data_dir.root, children).start()
        broker = "Redis" if settings.broker_url else f"embedded SQLite in {data_dir.root}"
        print(f"ocrserve serve: API on http://{host}:{port}, broker: {broker}, recogniser: {settings.recognizer}",
              file=sys.stderr)
        run_api(settings, host, port, args.log_level)
    except (ServiceStartError, RecognizerConfigError, RecognizerUnavailableError) as exc:
        print(f"ocrserve serve: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    finally:
        if supervisor is not None:
            supervisor.stop()
        else:
            for child in reversed(children):
                child.stop()
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    from app.commands import run_as_script

    run_as_script("serve")
