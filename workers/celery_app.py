"""The Celery application, built from `Settings`.

Broker and result backend:
- `OCRSERVE_BROKER_URL=redis://...`: Redis for both. A task taken by a worker
  that dies is redelivered once `broker_visibility_timeout_s` has passed
  (Redis keeps unacknowledged messages aside; every worker sweeps them back).
- unset: an embedded SQLite broker and result backend in the data directory
  (kombu's SQLAlchemy transport, tuned in `workers.embedded_broker`; Celery's
  database backend), so one machine
  needs no Redis. That transport forgets a message once a worker has taken
  it, so a worker that died loses it; the embedded set-up runs one worker and
  it re-queues unfinished jobs from the job store when it starts
  (`workers.recovery`, which also sweeps for work a crash left unsent on
  either broker).

No task stores a result (results live in the job store and the data
directory); the backend is kept for chords sent by earlier versions. Payloads
are JSON; pickle is never accepted.
"""
from __future__ import annotations

from celery import Celery

from workers import embedded_broker
from workers.data_dir import DataDir, private_file
from workers.settings import Settings

QUEUE = "ocrserve"
PROCESS_JOB = "ocrserve.process_job"
PROCESS_PAGE = "ocrserve.process_page"
FINISH_JOB = "ocrserve.finish_job"
RESCUE_JOB = "ocrserve.rescue_job"
REDIS_RESTORE_INTERVAL_S = 5


def build_celery_app(settings: Settings, include_tasks: bool = False) -> Celery:
    data_dir = DataDir(settings.data_dir).ensure()
    if settings.uses_embedded_broker:
        embedded_broker.register()
        # Created owner-only before SQLite first opens them: it would make them by the umask (0644).
        private_file(data_dir.broker_path)
        private_file(data_dir.result_backend_path)
        broker = f"{embedded_broker.SCHEME}+sqlite:///{data_dir.broker_path}"
        backend = f"db+sqlite:///{data_dir.result_backend_path}"
        transport_options: dict[str, object] = {}
    else:
        broker = backend = settings.broker_url
        transport_options = {
            "visibility_timeout": settings.broker_visibility_timeout_s,
            # Sweep for abandoned messages every few seconds (kombu's default scans every 100 s).
            "unacked_restore_interval": REDIS_RESTORE_INTERVAL_S,
            "unacked_restore_throttle": 1,
        }
    app = Celery("ocrserve", broker=broker, backend=backend,
                 include=["workers.tasks"] if include_tasks else [])
    app.conf.update(
        task_serializer="json", result_serializer="json", accept_content=["json"],
        task_default_queue=QUEUE,
        task_acks_late=True,
        # A pool process killed mid-task (OOM, SIGKILL) sends its task back instead of acking it.
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        broker_transport_options=transport_options,
        result_backend_transport_options=transport_options if not settings.uses_embedded_broker else {},
        broker_connection_retry_on_startup=True,
        result_expires=24 * 3600,
        result_extended=False,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        task_track_started=False,
        # A publish that cannot reach the broker fails in seconds, not minutes.
        task_publish_retry_policy={"max_retries": 3, "interval_start": 0.2, "interval_step": 0.5,
                                   "interval_max": 1.0},
    )
    return app
