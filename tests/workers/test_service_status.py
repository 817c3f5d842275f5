"""`GET /health` and `ocrserve status` on real services: the job store, a real Redis broker and a
real Celery worker process; Redis stopped, the report says so (the API still answers)."""
from __future__ import annotations

import json
import subprocess
import sys

from fastapi.testclient import TestClient

from app.main import create_app
from service_harness import REPO_ROOT, RedisServer, WorkerProcess, service_env
from workers.settings import Settings


def _status(env: dict[str, str]) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "app.commands.status", "--json"], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)
    return done.returncode, json.loads(done.stdout)


def test_health_and_status_report_the_store_the_broker_and_the_workers(tmp_path):
    redis = RedisServer(tmp_path)
    try:
        env = service_env(tmp_path / "data", redis.url, worker_concurrency=1)
        worker = WorkerProcess(env, tmp_path / "worker.log").wait_ready()
        try:
            code, report = _status(env)
            assert code == 0, report
            assert report["status"] == "ok"
            assert report["database"] == {"ok": True, "kind": "sqlite", "jobs_active": 0}
            assert report["broker"] == {"ok": True, "kind": "redis"}
            assert report["workers"]["count"] == 1 and report["workers"]["names"][0].startswith("ocrserve@")

            settings = Settings(data_dir=tmp_path / "data", broker_url=redis.url)
            health = TestClient(create_app(settings)).get("/health")
            assert health.status_code == 200
            body = health.json()
            assert body["status"] == "ok" and body["workers"] == {"count": 1}   # no names to anyone who asks
        finally:
            worker.stop()
    finally:
        redis.stop()
    code, report = _status(env)
    assert code == 1 and report["status"] == "degraded"
    assert report["broker"]["ok"] is False and "connecting" in report["broker"]["detail"].lower()
    assert report["database"]["ok"] is True and report["workers"]["count"] is None
    health = TestClient(create_app(Settings(data_dir=tmp_path / "data", broker_url=redis.url))).get("/health")
    assert health.status_code == 200 and health.json()["status"] == "degraded"


def test_the_embedded_broker_reports_workers_as_unknown(tmp_path):
    code, report = _status(service_env(tmp_path / "data"))
    assert code == 0 and report["broker"] == {"ok": True, "kind": "embedded"}
    assert report["workers"]["count"] is None and "embedded" in report["workers"]["detail"]


def test_status_names_a_postgresql_job_store_and_says_when_it_stops_answering(tmp_path, postgres_server):
    env = service_env(tmp_path / "data", database_url=postgres_server.new_database())
    code, report = _status(env)
    assert code == 0 and report["database"] == {"ok": True, "kind": "postgresql", "jobs_active": 0}
    env["OCRSERVE_DATABASE_URL"] = postgres_server.url("no_such_database")
    code, report = _status(env)
    assert code == 1 and report["status"] == "degraded"
    assert report["database"]["ok"] is False and report["database"]["kind"] == "postgresql"


def test_status_and_health_say_degraded_while_a_child_of_serve_is_down_and_ignore_a_dead_serves_report(tmp_path):
    from workers.data_dir import DataDir
    from workers.service_status import write_children_report

    env = service_env(tmp_path / "data")
    data = DataDir(tmp_path / "data").ensure().root
    # As serve's supervisor writes it (this process stands in for the live serve).
    write_children_report(data, {"worker": {"ok": False, "detail": "the worker was killed by SIGKILL; starting it "
                                            "again in 1 s", "restarts": 0},
                                 "engine": {"ok": True, "pid": 1, "restarts": 2}})
    code, report = _status(env)
    assert code == 1 and report["status"] == "degraded", report
    assert "killed by SIGKILL" in report["children"]["worker"]["detail"]
    human = subprocess.run([sys.executable, "-m", "app.commands.status"], env=env, cwd=REPO_ROOT,
                           capture_output=True, text=True, timeout=120).stdout
    assert "worker:    DOWN: the worker was killed by SIGKILL" in human and "restarted 2 time(s)" in human, human
    health = TestClient(create_app(Settings(data_dir=data))).get("/health").json()
    assert health["status"] == "degraded" and health["children"]["worker"]["ok"] is False

    # A report whose serve is gone (killed outright) says nothing.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    report_path = data / "serve-children.json"
    report_path.write_text(json.dumps({"pid": int(dead.stdout), "children": {"worker": {"ok": False}}}))
    code, report = _status(env)
    assert code == 0 and report["status"] == "ok" and "children" not in report, report
