"""One deployment on three hosts that share nothing but PostgreSQL and Redis: an
API host and two worker hosts, each with its own empty data directory, in network
namespaces of their own (tests/netns_hosts.py), or on loopback where namespaces
cannot be made. Jobs submitted through the API finish, their results download
through the API, a worker host killed mid-job has its pages finished by the other
with none done twice, and one key still cannot see another's job."""
from __future__ import annotations

import subprocess
import sys

import httpx
import pymupdf
import pytest

import netns_hosts
import ocr_samples as samples
from job_polling import wait_for_job_view
from postgres_server import PostgresServer
from service_harness import REPO_ROOT, RedisServer, WorkerProcess, free_port, service_env, wait_for
from workers.job_model import PageState
from workers.job_store import JobStore

KEYS = {"alice": "alice-multi-host-key", "bob": "bob-multi-host-key"}
PAGES = 6


class Topology:
    """Where each host runs and how it reaches the shared services."""

    def __init__(self, kind: str):
        self.kind = kind
        self.hosts = netns_hosts.Hosts(["api", "w1", "w2"]) if kind == "netns" else None

    def prefix(self, host: str) -> tuple[str, ...]:
        return self.hosts.prefix(host) if self.hosts else ()

    def services_for(self, host: str) -> str:
        return self.hosts.gateway(host) if self.hosts else "127.0.0.1"

    def address(self, host: str) -> str:
        return self.hosts.address(host) if self.hosts else "127.0.0.1"

    def listen(self) -> list[str]:
        return ["127.0.0.1", *(self.hosts.gateways() if self.hosts else [])]

    def close(self) -> None:
        if self.hosts:
            self.hosts.remove()


@pytest.fixture(params=["netns", "loopback"])
def topology(request):
    if request.param == "netns" and (reason := netns_hosts.unavailable()):
        pytest.skip(f"network namespaces are not available here ({reason}); the loopback variant runs instead")
    made = Topology(request.param)
    yield made
    made.close()


def _env(topology: Topology, host: str, data_dir, database: str, redis_port: int, **settings) -> dict[str, str]:
    reach = topology.services_for(host)
    return service_env(data_dir, f"redis://{reach}:{redis_port}/0", database_url=database.replace("127.0.0.1", reach),
                       blob_store="database", **settings)


def _auth(owner: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[owner]}"}


@pytest.mark.slow
def test_hosts_sharing_only_the_database_and_broker_finish_jobs_and_survive_a_lost_worker_host(tmp_path, topology):
    listen = topology.listen()
    postgres = PostgresServer(listen=",".join(listen), trusted_networks=(f"{netns_hosts.SUBNET}.0.0/16",))
    redis = RedisServer(tmp_path, bind=" ".join(listen))
    processes: list = []
    try:
        database = postgres.new_database()
        JobStore(database)   # the schema, as any host's first start would make it
        port = free_port()
        api_host = topology.address("api")
        api_env = _env(topology, "api", tmp_path / "api", database, redis.port, api_keys=",".join(KEYS.values()),
                       allowed_hosts=api_host, auth="keys")
        api = subprocess.Popen([*topology.prefix("api"), sys.executable, "-m", "app.commands.api", "--host", api_host,
                                "--port", str(port)], env=api_env, cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                               stderr=open(tmp_path / "api.log", "wb"))   # noqa: SIM115
        processes.append(api)
        client = httpx.Client(base_url=f"http://{api_host}:{port}", timeout=30)
        wait_for(lambda: _answers(client), 60, what="the API host")
        w1 = WorkerProcess(_env(topology, "w1", tmp_path / "w1", database, redis.port, worker_concurrency=1),
                           tmp_path / "w1.log", prefix=topology.prefix("w1")).wait_ready()
        processes.append(w1)

        # A first job, on one worker host, end to end through the API.
        small = _submit(client, "alice", samples.multi_page_pdf(2))
        assert _finished(client, "alice", small)["state"] == "done"
        markdown = client.get(f"/v1/jobs/{small}/result", params={"format": "md"}, headers=_auth("alice"))
        assert markdown.status_code == 200 and samples.page_sentence(0).split()[0] in markdown.text
        assert client.get(f"/v1/jobs/{small}", headers=_auth("bob")).status_code == 404, "keys stay apart"
        assert not (tmp_path / "w1" / "results" / small).exists(), "the worker host kept no copy of the outputs"

        # A second job: its worker host is killed mid-job; the other host finishes it.
        job_id = _submit(client, "alice", samples.multi_page_pdf(PAGES))
        store = JobStore(database)
        wait_for(lambda: _count(store, job_id, PageState.DONE) >= 1 and _count(store, job_id, PageState.RUNNING),
                 120, interval_s=0.05, what="a page of the second job running on host w1")
        w1.kill()
        w2 = WorkerProcess(_env(topology, "w2", tmp_path / "w2", database, redis.port, worker_concurrency=1),
                           tmp_path / "w2.log", prefix=topology.prefix("w2")).wait_ready()
        processes.append(w2)
        job = _finished(client, "alice", job_id, timeout_s=240)
        assert job["state"] == "done", job
        pages = store.get_job(job_id).pages
        assert [p.state for p in pages] == [PageState.DONE] * PAGES
        assert sum(p.attempts - p.lost_runs for p in pages) == PAGES, "no page finished twice"
        assert sum(p.lost_runs for p in pages) >= 1, "the page host w1 was reading when it died ran again"
        pdf = client.get(f"/v1/jobs/{job_id}/result", params={"format": "pdf"}, headers=_auth("alice"))
        assert pdf.status_code == 200
        with pymupdf.open(stream=pdf.content, filetype="pdf") as document:
            assert document.page_count == PAGES
        text = client.get(f"/v1/jobs/{job_id}/result", params={"format": "txt"}, headers=_auth("alice")).text
        assert all(samples.page_sentence(n).split()[0] in text for n in range(PAGES))
        assert client.get(f"/v1/jobs/{job_id}/result", params={"format": "pdf"},
                          headers=_auth("bob")).status_code == 404
        assert not (tmp_path / "api" / "results").exists() or not any((tmp_path / "api" / "results").iterdir()), \
            "the API host streamed the outputs from the store, with no copy of its own"
    finally:
        for process in reversed(processes):
            if isinstance(process, WorkerProcess):
                if process.process.poll() is None:
                    process.stop()
            elif process.poll() is None:
                process.terminate()
                process.wait(20)
        redis.stop()
        postgres.stop()


def _answers(client: httpx.Client) -> bool:
    try:
        return client.get("/health").status_code == 200
    except httpx.HTTPError:
        return False


def _submit(client: httpx.Client, owner: str, pdf: bytes) -> str:
    answer = client.post("/v1/jobs", headers=_auth(owner), data={"formats": "md,txt,pdf", "text_layer": "never"},
                         files=[("files", ("doc.pdf", pdf, "application/pdf"))])
    assert answer.status_code in (200, 201, 202), answer.text
    return answer.json()["id"]


def _finished(client: httpx.Client, owner: str, job_id: str, timeout_s: float = 180) -> dict:
    return wait_for_job_view(client, job_id, _auth(owner), timeout_s)


def _count(store: JobStore, job_id: str, state: PageState) -> int:
    return sum(p.state is state for p in store.get_job(job_id).pages)
