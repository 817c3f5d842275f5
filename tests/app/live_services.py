"""Real services for the webhook and live-progress tests: an `ocrserve api` process and
a worker on the embedded broker, sharing a data directory of their own (so no other
test's worker takes their tasks), and a webhook receiver that checks signatures with
its own code (the standard library's hmac), as a customer's would."""
from __future__ import annotations

import hashlib
import hmac
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))

from service_harness import WorkerProcess, free_port, service_env, wait_for  # noqa: E402
from web_harness import ApiProcess  # noqa: E402

MAX_CLOCK_SKEW_S = 300
LIVE_KEY = "live-test-key"
LIVE_OTHER_KEY = "live-other-key"
MAX_STREAMS = 2          # per key, in the API below
MAX_ATTEMPTS = 3         # per webhook delivery, in the worker below


class WebhookReceiver:
    """Records every POST; answers each path from a script (`answers[path]`: status codes used in
    turn, the last repeated; 302 redirects to /elsewhere). Checks each signature itself."""

    def __init__(self, host: str = "127.0.0.1"):
        self.secret: str | None = None
        self.answers: dict[str, list[int]] = {}
        self.received: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:   # noqa: N802 - the standard library's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                path = self.path
                script = receiver.answers.get(path, [200])
                seen = sum(1 for r in receiver.received if r["path"] == path)
                status = script[min(seen, len(script) - 1)]
                receiver.received.append({"path": path, "body": body, "headers": dict(self.headers),
                                          "signature_ok": receiver.signature_ok(self.headers, body),
                                          "status": status, "at": time.time()})
                self.send_response(status)
                if status == 302:
                    self.send_header("Location", "/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer((host, free_port()), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def signature_ok(self, headers, body: bytes) -> bool:
        """Stripe-style: `t=<unix>,v1=<hex>` over "<t>." + body, keyed with the secret; t recent."""
        fields = dict(part.split("=", 1) for part in headers.get("X-Ocrserve-Signature", "").split(",") if "=" in part)
        if self.secret is None or not fields.get("t", "").isdigit():
            return False
        expected = hmac.new(self.secret.encode(), fields["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, fields.get("v1", "")) and \
            abs(time.time() - int(fields["t"])) < MAX_CLOCK_SKEW_S

    def posts(self, path: str) -> list[dict]:
        return [r for r in self.received if r["path"] == path]

    def events(self, path: str) -> list[dict]:
        return [json.loads(r["body"]) for r in self.posts(path)]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class LiveServices:
    """`ocrserve api` and one worker on their own data directory and embedded broker."""

    def __init__(self, data_dir: Path, api_settings: dict[str, object], worker_settings: dict[str, object],
                 key: str, other_keys: tuple[str, ...] = ()):
        self.key = key
        self.store_path = data_dir / "jobs.sqlite"
        # No recovery sweep while the tests run: a job a test leaves queued on purpose stays queued.
        common = {"api_keys": ",".join((key, *other_keys)), "recovery_interval_s": 600}
        self.worker = WorkerProcess(service_env(data_dir, **common, **worker_settings), data_dir / "worker.log")
        self.api = ApiProcess(service_env(data_dir, **common, **api_settings), data_dir / "api.log")
        self.worker.wait_ready()
        self.api.wait_ready()
        self.base_url = self.api.base_url

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def queued_job(self, key: str, callback_url: str | None = None) -> str:
        """A job put in the store with no task sent: it stays queued until the test moves it."""
        from app.api_keys import hash_key
        from workers.job_model import JobFile, JobOptions
        from workers.job_store import JobStore

        store = JobStore(self.store_path)
        job_id = store.new_job_id()
        store.create_job(job_id, hash_key(key), [JobFile("a.pdf", "pdf", 1, "0" * 64, (0,))],
                         JobOptions(("md",), callback_url=callback_url))
        return job_id

    def stop(self) -> None:
        self.api.stop()
        self.worker.kill()   # nothing of it is checked after the tests: no need to wait for a warm shutdown


def wait_for_delivery_end(client, job_id: str, headers: dict[str, str], timeout_s: float = 60) -> list[dict]:
    """The job's deliveries once none is pending any more."""
    def ended():
        deliveries = client.get(f"/v1/jobs/{job_id}/deliveries", headers=headers).json()["deliveries"]
        return deliveries if deliveries and all(d["state"] != "pending" for d in deliveries) else None
    return wait_for(ended, timeout_s, what="the webhook deliveries")


def start_live_services(data_dir: Path) -> LiveServices:
    """The one set both the webhook and the live-progress tests use (tests/app/conftest.py): the API
    allows callbacks to 127.0.0.1 and 127.0.0.2, the worker, which delivers, only to 127.0.0.1."""
    return LiveServices(
        data_dir, key=LIVE_KEY, other_keys=(LIVE_OTHER_KEY,),
        api_settings={"webhook_allowed_hosts": "127.0.0.1,127.0.0.2", "max_event_streams_per_key": MAX_STREAMS,
                      "event_stream_poll_s": 1.0, "event_stream_keepalive_s": 1.0},
        worker_settings={"webhook_allowed_hosts": "127.0.0.1", "webhook_max_attempts": MAX_ATTEMPTS,
                         "webhook_retry_backoff_s": 0.3, "webhook_poll_interval_s": 0.2})
