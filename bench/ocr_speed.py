"""ocrserve's speed on real pages against whole-page Tesseract, its accuracy kept (issue 18).

    .venv/bin/python bench/ocr_speed.py --pages 30 --out artifacts/ocr_speed.json
    .venv/bin/python bench/ocr_speed.py --pages 4 --variants clean          # a quick check

Pages: the first `--pages` of bench/real_pages.json's pages (`--split`), taken round-robin
across its documents (each document's first page, then each one's second, ...), as the clean
PNG and the scan-like JPEG that bench/real_pages.py builds (and this reuses) in its work dir.

Batch, per variant, on the same two cores, in one run:
- `ocrserve run` on all the pages as one batch (real_pages.run_ocrserve: fresh output dir,
  `--formats txt,json`, defaults otherwise): wall from launch to exit, start-up included;
- start-up: the wall of `ocrserve run` on one tiny page (one printed line), i.e. what any batch
  pays to start and stop its engine and worker; also when the batch wrote its first page;
- Tesseract as real_pages.run_tesseract runs it (two single-threaded processes at once).
Order: start-up, ocrserve, Tesseract for the first variant and the reverse for the second, so
drift in the machine's load hits both. CPU seconds: RUSAGE_CHILDREN around each (every process
waited for). Accuracy in the same run: median CER and word recall of both (real_pages_metrics).

Stages: the per-page `timings` of ocrserve's NAME.json, mean seconds per page and share of their
sum. Pages are worked on two at a time (the default worker pool), so these are each page's own
latencies, not shares of the batch's wall. Recognition is not split into encoder, decoder and serving: the engine's
/metrics has no time series for them (it is scraped during the batch, and printed, for what it
has: requests, tokens, drafts, time to first token, inter-token latency).

Serve: `ocrserve serve` with its default workers on free loopback ports (temporary data dir and
API key), the same pages posted as `--jobs` concurrent jobs (POST /v1/jobs, pages dealt out
round-robin), polled until every job ends; pages per second from the first submit to the last
job seen done, CPU of the whole process tree in that window (API, worker, the house-ocr engine
and the SmolLM2 extraction engine `serve` starts by default), accuracy from each job's JSON.
The server is stopped (SIGTERM to its group, then its descendants by pid) even on error.
Prints a table and writes JSON (`--out`).
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil
from PIL import Image, ImageDraw, ImageFont
from prometheus_client.parser import text_string_to_metric_families

from house_ocr_eval import cpu_seconds   # bench/ is on sys.path when this file runs
from real_pages import DPI, ROOT, SPLITS, VARIANTS, Page, build, load_pages, read_output, run_ocrserve, run_tesseract
from real_pages_metrics import page_scores
from workers.document_result import render_text   # real_pages' imports put the repository on sys.path
from workers.settings import Settings

OCRSERVE = Path(sys.executable).parent / "ocrserve"
STAGES = ("render", "layout", "lines", "order", "text_layer", "recognition", "assembly")
NOT_SPLIT = ("encoder", "decoder", "serving")
METRICS = ("requests_received_total", "prompt_tokens_total", "generation_tokens_total", "spec_draft_tokens_total",
           "spec_accepted_tokens_total", "time_to_first_token_seconds_sum", "inter_token_latency_seconds_sum",
           "inter_token_latency_seconds_count", "retractions_total")
MEDIA = {".png": "image/png", ".jpg": "image/jpeg"}


def choose_pages(split: str, count: int) -> list[Page]:
    by_doc: dict[str, list[Page]] = {}
    for page in load_pages(split, set(), None)[0]:
        by_doc.setdefault(page.doc, []).append(page)
    rounds = max(map(len, by_doc.values()), default=0)
    return [doc[r] for r in range(rounds) for doc in by_doc.values() if r < len(doc)][:count]


def engine_metrics(url: str) -> dict[str, float]:
    text = httpx.get(f"{url}/metrics", timeout=5).text
    return {s.name.removeprefix("ocrserve_"): s.value for family in text_string_to_metric_families(text)
            for s in family.samples if s.name.removeprefix("ocrserve_") in METRICS}


class RunScraper(threading.Thread):
    """Keeps the latest /metrics of the engine a child `ocrserve run` started (found by its
    command line and listening port); counters start at zero with the engine, so the last scrape
    (at most `period_s` before the engine stops) is the batch's total."""

    def __init__(self, period_s: float = 0.5):
        super().__init__(daemon=True)
        self.period_s, self.url, self.last, self.done = period_s, None, None, threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.period_s):
            try:
                self.url = self.url or _engine_url()
                self.last = engine_metrics(self.url) if self.url else self.last
            except (httpx.HTTPError, psutil.Error):
                pass


def _engine_url() -> str | None:
    for child in psutil.Process().children(recursive=True):
        if "engine.server" in " ".join(child.cmdline()):
            ports = [c.laddr.port for c in child.net_connections("tcp") if c.status == psutil.CONN_LISTEN]
            if ports:
                return f"http://127.0.0.1:{ports[0]}"
    return None


def timed(name: str, runner, images: list[Path], out: Path) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    print(f"  {name}: {len(images)} image(s) ...", flush=True)
    scraper = RunScraper() if name != "tesseract" else None
    if scraper:
        scraper.start()
    cpu, launched = cpu_seconds(None, own=False), time.time()
    run = runner(images, out) | {"cpu_s": cpu_seconds(None, own=False) - cpu, "pages": len(images)}
    if scraper:
        scraper.done.set()
        scraper.join()
        written = [p.stat().st_mtime for p in out.glob("*.json")]
        run |= {"engine_metrics": scraper.last, "first_page_s": min(written) - launched if written else None}
    print(f"  {name}: {run['wall_s']:.1f} s wall, {run['cpu_s']:.1f} s CPU, exit {run['returncode']}", flush=True)
    return run


def tiny_page(path: Path) -> Path:
    image = Image.new("RGB", (700, 90), "white")
    ImageDraw.Draw(image).text((20, 25), "Start-up costs one line of text.", fill="black",
                               font=ImageFont.load_default(size=30))
    image.save(path, dpi=(DPI, DPI))
    return path


def scores(texts: dict[str, str], truths: dict[str, str]) -> dict:
    rows = {name: page_scores(texts.get(name, ""), truth) for name, truth in truths.items()}
    return {"median_cer": statistics.median(r["cer"] for r in rows.values()),
            "median_recall": statistics.median(r["recall"] for r in rows.values()),
            "missing": sorted(set(truths) - set(texts)), "per_page": rows}


def stage_table(timings: list[dict]) -> dict:
    means = {stage: statistics.fmean(t.get(stage, 0.0) for t in timings) for stage in STAGES}
    total = sum(means.values()) or 1.0
    return {stage: {"s_per_page": s, "share": s / total} for stage, s in means.items()} | {
        part: "not measured (the engine exposes no time series for it)" for part in NOT_SPLIT}


def batch(variant: str, index: int, pages: list[Page], args: argparse.Namespace, truths: dict) -> dict:
    images = [args.work / variant / f"{page.name}{VARIANTS[variant]}" for page in pages]
    out = args.speed_dir / variant
    steps = {"startup": lambda: timed("start-up", run_ocrserve, [tiny_page(args.speed_dir / "startup.png")],
                                      out / "startup"),
             "ocrserve": lambda: timed("ocrserve", run_ocrserve, images, out / "ocrserve"),
             "tesseract": lambda: timed("tesseract", run_tesseract, images, out / "tesseract")}
    print(f"{variant}: batch of {len(images)} pages", flush=True)
    runs = {name: steps[name]() for name in (list(steps) if index % 2 == 0 else list(steps)[::-1])}
    found = {system: {page.name: read_output(system, out / system, page) for page in pages}
             for system in ("ocrserve", "tesseract")}
    for system in found:
        runs[system]["s_per_page"] = runs[system]["wall_s"] / len(pages)
        runs[system]["cpu_s_per_page"] = runs[system]["cpu_s"] / len(pages)
        runs[system] |= scores({n: f["text"] for n, f in found[system].items() if not f["missing"]}, truths)
    o, t = runs["ocrserve"], runs["tesseract"]
    timings = [f["timings"] for f in found["ocrserve"].values() if f.get("timings")]
    return runs | {"wall_ratio": o["wall_s"] / t["wall_s"], "cpu_ratio": o["cpu_s"] / t["cpu_s"],
                   "target_met": {"time_at_most_1x": o["wall_s"] <= t["wall_s"],
                                  "median_cer_better": o["median_cer"] < t["median_cer"],
                                  "median_recall_better": o["median_recall"] > t["median_recall"]},
                   "stages": stage_table(timings) if timings else None,
                   "startup_s_per_page": runs["startup"]["wall_s"] / len(pages)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tree_cpu(root: psutil.Process) -> float:
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total


def serve(variants: dict[str, list[Path]], truths: dict[str, str], args: argparse.Namespace) -> dict:
    data = Path(tempfile.mkdtemp(prefix="ocr-speed-serve-"))
    key, port, engine_port = secrets.token_urlsafe(24), free_port(), free_port()
    env = {**os.environ, "OCRSERVE_DATA_DIR": str(data), "OCRSERVE_API_KEYS": key,
           "OCRSERVE_ENGINE_PORT": str(engine_port), "OCRSERVE_EXTRACTION_PORT": str(free_port())}
    base, headers = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {key}"}
    log_path = args.speed_dir / "serve.log"
    log = open(log_path, "wb")   # noqa: SIM115 - closed in finally
    started = time.perf_counter()
    proc = subprocess.Popen([str(OCRSERVE), "serve", "--host", "127.0.0.1", "--port", str(port)], env=env,
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    root, family = psutil.Process(proc.pid), []
    try:
        while True:
            family = root.children(recursive=True)   # the engines and worker, to stop by pid if need be
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.perf_counter() - started > args.timeout:
                raise RuntimeError(f"ocrserve serve did not come up (exit {proc.poll()}); see {log_path}")
            time.sleep(1)
        result = {"ready_s": time.perf_counter() - started, "worker_concurrency": Settings().worker_concurrency}
        print(f"serve: ready after {result['ready_s']:.0f} s", flush=True)
        family = root.children(recursive=True)
        for variant, images in variants.items():
            result[variant] = serve_variant(base, headers, images, truths, f"http://127.0.0.1:{engine_port}",
                                            root, proc, args)
        return result
    finally:
        _stop(proc, family)
        log.close()
        shutil.rmtree(data, ignore_errors=True)


def _stop(proc: subprocess.Popen, family: list[psutil.Process]) -> None:
    """SIGTERM to serve's group (it stops its worker and engines), SIGKILL after 60 s; then any
    descendant still alive (they run in sessions of their own), by pid."""
    for sig, wait_s in ((signal.SIGTERM, 60), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(wait_s)
            break
        except (ProcessLookupError, subprocess.TimeoutExpired):
            continue
    for child in family:
        try:
            child.terminate()
            child.wait(10)
        except psutil.TimeoutExpired:
            child.kill()
        except psutil.Error:
            pass


def serve_variant(base: str, headers: dict, images: list[Path], truths: dict[str, str], engine: str,
                  root: psutil.Process, proc: subprocess.Popen, args: argparse.Namespace) -> dict:
    groups = [group for group in (images[i::args.jobs] for i in range(args.jobs)) if group]

    def submit(group: list[Path]) -> str:
        files = [("files", (p.name, p.read_bytes(), MEDIA[p.suffix])) for p in group]
        reply = httpx.post(f"{base}/v1/jobs", headers=headers, files=files, data={"formats": "json,txt"}, timeout=120)
        if reply.status_code != 202:
            raise RuntimeError(f"POST /v1/jobs: {reply.status_code} {reply.text[:300]}")
        return reply.json()["id"]

    before, cpu, started = engine_metrics(engine), tree_cpu(root), time.perf_counter()
    with ThreadPoolExecutor(len(groups)) as pool:
        job_ids = list(pool.map(submit, groups))
    done: dict[str, tuple[float, dict]] = {}
    while len(done) < len(job_ids):
        if proc.poll() is not None or time.perf_counter() - started > args.timeout:
            states = {j: httpx.get(f"{base}/v1/jobs/{j}", headers=headers).json() if proc.poll() is None else None
                      for j in job_ids if j not in done}
            raise RuntimeError(f"serve: jobs not finished after {time.perf_counter() - started:.0f} s "
                               f"(server exit {proc.poll()}): {json.dumps(states)[:2000]}")
        time.sleep(0.25)
        for job_id in set(job_ids) - set(done):
            view = httpx.get(f"{base}/v1/jobs/{job_id}", headers=headers, timeout=30).json()
            if view["state"] in ("done", "failed", "cancelled"):
                done[job_id] = (time.perf_counter() - started, view)
    wall, cpu = max(t for t, _ in done.values()), tree_cpu(root) - cpu
    after = engine_metrics(engine)
    texts, timings, failed = {}, [], {}
    for job_id, (_, view) in done.items():
        if view["state"] != "done":
            failed[job_id] = view
            continue
        result = httpx.get(f"{base}/v1/jobs/{job_id}/result", params={"format": "json"}, headers=headers,
                           timeout=60).json()
        for document in result["documents"]:
            texts[Path(document["filename"]).stem] = render_text({"documents": [document]}, keep_furniture=True)
            timings += [page["timings"] for page in document["pages"] if page.get("timings")]
    print(f"serve: {len(images)} pages in {len(job_ids)} jobs, {wall:.1f} s", flush=True)
    return {"jobs": len(job_ids), "pages": len(images), "wall_s": wall, "pages_per_s": len(images) / wall,
            "cpu_s": cpu, "job_done_s": sorted(t for t, _ in done.values()), "failed_jobs": failed,
            "engine_metrics": {k: after[k] - before.get(k, 0.0) for k in after},
            "stages": stage_table(timings) if timings else None} | scores(texts, truths)


def _engine_line(m: dict) -> str:
    itl_ms = 1000 * m["inter_token_latency_seconds_sum"] / max(1, m["inter_token_latency_seconds_count"])
    return (f"{m['requests_received_total']:.0f} requests, {m['prompt_tokens_total']:.0f} prompt + "
            f"{m['generation_tokens_total']:.0f} generated tokens, drafted tokens accepted "
            f"{m['spec_accepted_tokens_total']:.0f}/{m['spec_draft_tokens_total']:.0f}, time to first token "
            f"summed {m['time_to_first_token_seconds_sum']:.1f} s, mean inter-token {itl_ms:.0f} ms")


def report(batches: dict, served: dict | None) -> None:
    for variant, b in batches.items():
        s = (served or {}).get(variant)
        print(f"\n== {variant}: batch of {b['ocrserve']['pages']} pages, wall start-up included ==\n"
              f"{'system':<10} {'s/page':>7} {'wall s':>7} {'CPU s/page':>10} {'med CER':>8} {'med recall':>10}")
        for system in ("ocrserve", "tesseract"):
            r = b[system]
            print(f"{system:<10} {r['s_per_page']:>7.2f} {r['wall_s']:>7.1f} {r['cpu_s_per_page']:>10.2f} "
                  f"{r['median_cer']:>8.3f} {r['median_recall']:>10.3f}")
        first = b["ocrserve"]["first_page_s"]
        print(f"ocrserve/tesseract: wall {b['wall_ratio']:.2f}x, CPU {b['cpu_ratio']:.2f}x; targets: "
              + ", ".join(f"{k}={v}" for k, v in b["target_met"].items())
              + f"\nstart-up (a run on one tiny page): {b['startup']['wall_s']:.1f} s = {b['startup_s_per_page']:.2f}"
              f" s/page of this batch; its first page written after {'-' if first is None else f'{first:.1f}'} s")
        for where, stages in (("ocrserve run", b["stages"]), ("serve", s and s["stages"])):
            if stages:
                print(f"stages, {where} (mean s per page, share): " + ", ".join(
                    f"{x} {stages[x]['s_per_page']:.2f} ({stages[x]['share']:.0%})" for x in STAGES))
        print("encoder, decoder, serving: not measured (the engine's /metrics has no time series for them)")
        for where, metrics in (("batch", b["ocrserve"]["engine_metrics"]), ("serve", s and s["engine_metrics"])):
            if metrics:
                print(f"engine /metrics, {where}: {_engine_line(metrics)}")
    if served:
        print(f"\n== serve ({served['worker_concurrency']} worker processes, the default; ready after "
              f"{served['ready_s']:.0f} s) ==\n{'variant':<8} {'jobs':>4} {'pages':>5} {'wall s':>7} {'pages/s':>8} "
              f"{'batch pages/s':>13} {'CPU s/page':>10} {'med CER':>8} {'med recall':>10} {'failed':>6}")
        for variant, b in batches.items():
            if (s := served.get(variant)) is not None:
                print(f"{variant:<8} {s['jobs']:>4} {s['pages']:>5} {s['wall_s']:>7.1f} {s['pages_per_s']:>8.3f} "
                      f"{1 / b['ocrserve']['s_per_page']:>13.3f} {s['cpu_s'] / s['pages']:>10.2f} "
                      f"{s['median_cer']:>8.3f} {s['median_recall']:>10.3f} {len(s['failed_jobs']):>6}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    parser.add_argument("--variants", default="clean,scan", help="comma-separated: clean,scan")
    parser.add_argument("--jobs", type=int, default=10, help="concurrent jobs for the serve figure")
    parser.add_argument("--no-serve", action="store_true", help="skip the serve figure")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds serve may take to start, and a "
                        "variant's jobs to finish")
    parser.add_argument("--work", type=Path, default=ROOT / "artifacts" / "real_pages",
                        help="real_pages.py's work dir: images and truth (built there when missing)")
    parser.add_argument("--speed-dir", type=Path, default=ROOT / "artifacts" / "ocr_speed", help="outputs and logs")
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "ocr_speed.json")
    parser.add_argument("--seed", type=int, default=17, help="real_pages.py's seed for the scan-like images")
    args = parser.parse_args()
    variants = [v for v in VARIANTS if v in args.variants.split(",")]
    pages = choose_pages(args.split, args.pages)
    if not variants or not pages or args.jobs < 1:
        parser.error("--variants, --pages/--split and --jobs must select something")
    print(f"{len(pages)} pages of {len({p.doc for p in pages})} documents; variants {','.join(variants)}", flush=True)
    build(pages, args.work, args.seed, keep=True)
    args.speed_dir.mkdir(parents=True, exist_ok=True)
    truths = {p.name: (args.work / "truth" / f"{p.name}.txt").read_text() for p in pages}
    batches = {variant: batch(variant, index, pages, args, truths) for index, variant in enumerate(variants)}
    served = None if args.no_serve else serve(
        {v: [args.work / v / f"{p.name}{VARIANTS[v]}" for p in pages] for v in variants},
        truths, args)
    report(batches, served)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"pages": [p.name for p in pages], "split": args.split, "dpi": DPI,
                                    "batch": batches, "serve": served}, indent=1))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
