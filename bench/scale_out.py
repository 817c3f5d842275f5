"""Scale-out: the same page workload on one host and on two hosts, on SQLite and on PostgreSQL
(issue 21).

    .venv/bin/python bench/scale_out.py --pages 40 --out artifacts/scale_out.json   # as root, for namespaces

Workload: `--pages` pages of a real typeset PDF (R-intro from r-doc-pdf by default, which
bench/real_pages.py --install provides; pages 10 onwards, prose, code and tables), as `--jobs`
jobs from two keys, recognised by Tesseract at 150 DPI with the text layer ignored, so the two
cores are the limit and the recogniser costs every configuration the same.

Configurations, each with a fresh Redis and a fresh database, in one run:
- `sqlite, 1 host`: the embedded job store and the local data directory; two worker processes
  (one pool process each) sharing the data directory;
- `postgresql, 1 host`: the same two workers on one data directory, the store in PostgreSQL;
- `postgresql, 2 hosts`: one worker process on each of two network-namespace hosts
  (tests/netns_hosts.py) with data directories of their own, sharing PostgreSQL and Redis only,
  files through the database (OCRSERVE_BLOB_STORE=database). Needs root; skipped otherwise.
Wall time from the first submission to the last job done, pages per second, and the CPU time
of the worker processes.

The job store's own cost per page: the exact sequence of store calls one page makes (admit,
claim, read the job, check it is active, save a result of `--result-kb`, and its share of the
job's create, start, finish and result read), replayed `--store-pages` times in one process,
then in four at once, on SQLite and on PostgreSQL: milliseconds per page, and pages per second
one database absorbs (all replayed pages over the slowest process's time). Prints a table and writes JSON (`--out`).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pymupdf

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "workers")]

import netns_hosts  # noqa: E402
from postgres_server import PostgresServer  # noqa: E402
from service_harness import RedisServer, WorkerProcess, service_env  # noqa: E402
from workers.job_model import JobFile, JobOptions, JobState, PageState  # noqa: E402
from workers.job_service import JobService, Upload  # noqa: E402
from workers.job_store import JobStore  # noqa: E402
from workers.settings import Settings  # noqa: E402

DEFAULT_PDF = Path("/usr/share/doc/r-doc-pdf/manual/R-intro.pdf")
OWNERS = ("alice", "bob")


def workload(pdf: Path, first_page: int, pages: int, jobs: int) -> list[bytes]:
    """`jobs` PDFs cut from `pdf`, `pages` pages in all."""
    per_job = [pages // jobs + (i < pages % jobs) for i in range(jobs)]
    out, start = [], first_page
    with pymupdf.open(pdf) as source:
        for count in per_job:
            with pymupdf.open() as part:
                part.insert_pdf(source, from_page=start, to_page=start + count - 1)
                out.append(part.tobytes())
            start += count
    return out


def run_config(name: str, documents: list[bytes], work: Path, database: str | None, hosts: list[str],
               topology: netns_hosts.Hosts | None, redis: RedisServer) -> dict:
    """Submit every document, wait for every job, return the wall, pages/s and workers' CPU."""
    api_dir = work / "api"
    settings = Settings(data_dir=api_dir, broker_url=redis.url, database_url=database,
                        blob_store="database" if topology else "local", render_dpi=150)
    service = JobService(settings)
    workers = []
    for index, host in enumerate(hosts):
        reach = topology.gateway(host) if topology else "127.0.0.1"
        data_dir = work / host if topology else api_dir
        env = service_env(data_dir, f"redis://{reach}:{redis.port}/0", worker_concurrency=1, render_dpi=150,
                          page_time_limit_s=300, broker_visibility_timeout_s=600, text_layer="never",
                          database_url=database.replace("127.0.0.1", reach) if database else None,
                          blob_store="database" if topology else None)
        workers.append(WorkerProcess(env, work / f"{name.replace(' ', '-').replace(',', '')}-w{index}.log",
                                     prefix=topology.prefix(host) if topology else ()).wait_ready(180))
    try:
        started = time.monotonic()
        job_ids = [service.submit(OWNERS[i % len(OWNERS)], [Upload(f"part{i}.pdf", data)], formats="txt",
                                  text_layer="never").id for i, data in enumerate(documents)]
        while True:
            jobs = [service.store.get_job(job_id) for job_id in job_ids]
            if all(job.state.is_final for job in jobs):
                break
            time.sleep(0.2)
        wall = time.monotonic() - started
        cpu = sum(_tree_cpu(worker.process.pid) for worker in workers)
    finally:
        for worker in workers:
            worker.stop()
    pages = sum(job.pages_total for job in jobs)
    failed = sum(p.state is not PageState.DONE for job in jobs for p in job.pages)
    return {"config": name, "pages": pages, "pages_failed": failed, "wall_s": round(wall, 2),
            "pages_per_s": round(pages / wall, 3), "worker_cpu_s": round(cpu, 1),
            "states": sorted({job.state.value for job in jobs})}


def _tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its live descendants (the worker and its pool)."""
    import psutil

    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
        except psutil.NoSuchProcess:
            pass
    return total


# ---- the store's own cost per page

def _replay(args: tuple[str, int, int, int]) -> float:
    """Replay `pages` pages' store calls (jobs of `job_pages`); returns the seconds they took."""
    location, pages, job_pages, result_bytes = args
    store = JobStore(location)
    result = {"regions": [{"text": "x" * 200, "bbox": [0, 0, 1, 1]}] * max(1, result_bytes // 230)}
    started = time.perf_counter()
    done = 0
    owner = f"owner-{os.getpid()}"
    while done < pages:
        count = min(job_pages, pages - done)
        job_id = store.new_job_id()
        store.create_job(job_id, owner, [JobFile("a.pdf", "pdf", count, "0" * 64, tuple(range(count)))],
                         JobOptions(("txt",)))
        store.mark_job_running(job_id)
        store.mark_job_sent(job_id)
        while store.has_pending_pages(job_id):
            for page in store.admit_pages(quota=8):
                if store.claim_page(page.job_id, page.file_index, page.page_index, page.dispatch) is None:
                    continue
                store.get_job(page.job_id)
                store.is_active(page.job_id)
                store.save_page(page.job_id, page.file_index, page.page_index, PageState.DONE, None, result,
                                (len(result["regions"]), 0, 0))
        store.claim_finish(job_id, 60)
        store.page_results(job_id)
        store.finish_job(job_id, JobState.DONE)
        store.release_finish(job_id)
        done += count
    return time.perf_counter() - started


def store_cost(location: str, pages: int, result_kb: int, processes: int) -> dict:
    JobStore(location)   # migrated once, outside the timing
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        seconds = pool.map(_replay, [(location, pages, 10, result_kb * 1024)] * processes)
    wall = max(seconds)   # the replays start together (pool start-up and imports not counted)
    return {"processes": processes, "pages": pages * processes, "ms_per_page": round(1000 * statistics.mean(
        s / pages for s in seconds), 2), "pages_per_s": round(pages * processes / wall, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--pdf", type=Path, default=DEFAULT_PDF)
    parser.add_argument("--first-page", type=int, default=10, help="0-based page the workload starts at")
    parser.add_argument("--store-pages", type=int, default=300, help="pages replayed per process for the store's cost")
    parser.add_argument("--result-kb", type=int, default=24, help="size of a replayed page result")
    parser.add_argument("--skip-workload", action="store_true", help="only the store's cost per page")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report: dict = {"workload": [], "store": [], "pages": args.pages, "pdf": str(args.pdf)}
    postgres = None
    with tempfile.TemporaryDirectory(prefix="ocrserve-scale-") as tmp:
        work = Path(tmp)
        reason = netns_hosts.unavailable()
        hosts = netns_hosts.Hosts(["w1", "w2"]) if reason is None else None
        try:
            listen = ["127.0.0.1", *(hosts.gateways() if hosts else [])]
            postgres = PostgresServer(listen=",".join(listen), trusted_networks=(f"{netns_hosts.SUBNET}.0.0/16",))
            # The store's cost first, on a quiet machine.
            for kind in ("sqlite", "postgresql"):
                for processes in (1, 4):
                    location = str(work / f"replay-{processes}.sqlite") if kind == "sqlite" else postgres.new_database()
                    row = {"store": kind, **store_cost(location, args.store_pages, args.result_kb, processes)}
                    report["store"].append(row)
                    print(json.dumps(row), flush=True)
            if not args.skip_workload:
                if not args.pdf.exists():
                    sys.exit(f"{args.pdf} is missing: sudo .venv/bin/python bench/real_pages.py --install")
                documents = workload(args.pdf, args.first_page, args.pages, args.jobs)
                configs = [("sqlite, 1 host", None, ["w1", "w2"], None),
                           ("postgresql, 1 host", "pg", ["w1", "w2"], None)]
                if hosts is not None:
                    configs.append(("postgresql, 2 hosts", "pg", ["w1", "w2"], hosts))
                else:
                    print(f"postgresql, 2 hosts: skipped ({reason})", flush=True)
                for name, db, host_names, topology in configs:
                    config_dir = work / name.replace(" ", "-").replace(",", "")
                    config_dir.mkdir()
                    redis = RedisServer(config_dir, bind=" ".join(listen))
                    try:
                        database = postgres.new_database() if db else None
                        row = run_config(name, documents, config_dir, database, host_names, topology, redis)
                    finally:
                        redis.stop()
                    report["workload"].append(row)
                    print(json.dumps(row), flush=True)
        finally:
            if postgres is not None:
                postgres.stop()
            if hosts is not None:
                hosts.remove()
    report["self_cpu_s"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_utime, 1)
    _table(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1))


def _table(report: dict) -> None:
    print("\n| configuration | pages | wall s | pages/s | worker CPU s | failed |")
    print("|---|---|---|---|---|---|")
    for row in report["workload"]:
        print(f"| {row['config']} | {row['pages']} | {row['wall_s']} | {row['pages_per_s']} | "
              f"{row['worker_cpu_s']} | {row['pages_failed']} |")
    print("\n| job store | processes | pages | ms per page (each process) | pages/s absorbed |")
    print("|---|---|---|---|---|")
    for row in report["store"]:
        print(f"| {row['store']} | {row['processes']} | {row['pages']} | {row['ms_per_page']} | {row['pages_per_s']} |")


if __name__ == "__main__":
    main()
