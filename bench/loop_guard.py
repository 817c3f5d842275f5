"""The loop guard on real pages: ocrserve (house model) with the guard on and off, same pages.

    nice -n 10 .venv/bin/python bench/loop_guard.py --variant clean --split dev --out artifacts/loop_guard.json

Pages: those of bench/real_pages.py (its page lists, splits and files; build them with that
script first), given to ocrserve as that script gives them (clean: the one-page PDFs with
`--text-layer never`; scan and augraphy: the JPEGs). For each setting (`OCRSERVE_LOOP_GUARD`
1, then 0) a fresh house-model engine is started the way `ocrserve run` starts its own
(app.local_services.start_engine), one `ocrserve run` reads every page through it, and the
engine's /metrics are read before it stops: requests the guard watched and stopped, and those
that ran to their token limit (loops it did not stop).

Reported: regions and lines the guarded run marks `truncated_repetition` (the issue's rule:
no region of the real-page set may be truncated; each one is listed with its text), and the
lines whose text differs between the two runs (with nothing stopped, none should: the guard
changes no token it lets through), with each such page's CER against its truth both ways.
Prints a table and writes JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from real_pages import INPUTS, ROOT, load_pages   # bench/ is on sys.path when this file runs
from real_pages_metrics import page_scores

sys.path.insert(0, str(ROOT))
from app.local_services import child_env, start_engine  # noqa: E402
from workers.settings import Settings  # noqa: E402

WORK = ROOT / "artifacts" / "real_pages"   # bench/real_pages.py's inputs, and truth/NAME.txt
SERIES = {"ocrserve_loop_guard_requests_total": "guarded", "ocrserve_loop_guard_stops_total": "stopped"}


def engine_figures(metrics_url: str) -> dict[str, float]:
    figures = {"length": 0.0, "requests": 0.0}
    for family in text_string_to_metric_families(httpx.get(metrics_url, timeout=30).text):
        for sample in family.samples:
            if sample.name in SERIES:
                figures[SERIES[sample.name]] = sample.value
            elif sample.name == "ocrserve_request_success_total":
                figures["requests"] += sample.value
                if sample.labels.get("finish_reason") == "length":
                    figures["length"] = sample.value
    return figures


def run(inputs: list[Path], out: Path, guard: bool, text_layer: str) -> dict:
    settings = Settings()
    env = child_env(settings, loop_guard="1" if guard else "0")
    out.mkdir(parents=True, exist_ok=True)
    engine, url = start_engine(settings, env, 0, out / "engine.log")
    try:
        env = dict(env, OCRSERVE_ENGINE_URL=url)
        command = [str(Path(sys.executable).parent / "ocrserve"), "run", *map(str, inputs), "--out", str(out),
                   "--formats", "json,txt", "--force", "--quiet", "--text-layer", text_layer]
        started = time.perf_counter()
        with open(out / "run.log", "w") as log:
            code = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        wall_s = time.perf_counter() - started
        figures = engine_figures(url.removesuffix("/v1") + "/metrics")
    finally:
        engine.stop()
    return {"returncode": code, "wall_s": round(wall_s, 1), **figures}


def page_lines(path: Path) -> list[dict]:
    """Every region of the page's JSON, with its lines."""
    data = json.loads(path.read_text())
    pages = data["documents"][0]["pages"] if "documents" in data else data["pages"]
    return [region for page in pages for region in page["regions"]]


def compare(names: list[str], on: Path, off: Path) -> dict:
    truncated, differing, num_regions, num_lines = [], [], 0, 0
    for name in names:
        regions_on, regions_off = page_lines(on / f"{name}.json"), page_lines(off / f"{name}.json")
        num_regions += len(regions_on)
        for region in regions_on:
            num_lines += len(region["lines"])
            if region.get("truncated_repetition"):
                truncated.append({"page": name, "region": region["reading_index"],
                                  "lines": [line["text"] for line in region["lines"]
                                            if line.get("truncated_repetition")]})
        text_on = [line["text"] for region in regions_on for line in region["lines"]]
        text_off = [line["text"] for region in regions_off for line in region["lines"]]
        if text_on != text_off:
            changed = [(a, b) for a, b in zip(text_on, text_off) if a != b]
            truth = (WORK / "truth" / f"{name}.txt").read_text()
            cer = {setting: round(page_scores((folder / f"{name}.txt").read_text(), truth)["cer"], 4)
                   for setting, folder in (("on", on), ("off", off))}
            differing.append({"page": name, "lines_on": len(text_on), "lines_off": len(text_off),
                              "page_cer": cer, "changed": changed[:5]})
    return {"pages": len(names), "regions": num_regions, "lines": num_lines, "truncated_regions": truncated,
            "differing_pages": differing}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", choices=sorted(INPUTS), default="clean")
    parser.add_argument("--split", choices=("dev", "held_out", "all"), default="dev")
    parser.add_argument("--max-pages", type=int, default=None, help="first N pages of each document")
    parser.add_argument("--docs", default="", help="comma-separated document stems (default: all)")
    parser.add_argument("--work", type=Path, default=None, help="where the runs' outputs go (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "loop_guard.json")
    parser.add_argument("--settings", default="on,off",
                        help="the runs to make; a run left out is read back from --work (its run.json)")
    args = parser.parse_args()
    pages, _ = load_pages(args.split, set(filter(None, args.docs.split(","))), args.max_pages)
    folder, suffix = INPUTS[args.variant]["ocrserve"]
    inputs = [WORK / folder / f"{page.name}{suffix}" for page in pages]
    missing = [str(path) for path in inputs if not path.exists()]
    if missing:
        print(f"{len(missing)} inputs missing (first {missing[0]}); build them with bench/real_pages.py",
              file=sys.stderr)
        return 2
    text_layer = "never"   # as bench/real_pages.py reads the clean PDFs: every line recognised
    work = args.work or Path(tempfile.mkdtemp(prefix="loop-guard-"))
    runs = {}
    for setting in ("on", "off"):
        if setting in args.settings.split(","):
            runs[setting] = run(inputs, work / setting, setting == "on", text_layer)
            (work / setting / "run.json").write_text(json.dumps(runs[setting]))
        else:
            runs[setting] = json.loads((work / setting / "run.json").read_text())
        print(f"guard {setting}: {runs[setting]}", flush=True)
    found = compare([page.name for page in pages], work / "on", work / "off")
    report = {"variant": args.variant, "split": args.split, "runs": runs, **found,
              "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]), "os_cpus": os.cpu_count()}
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    print(f"\n| {args.variant} {args.split} | pages | regions | lines | guarded requests | stopped | "
          f"ran to the limit | truncated regions | pages whose lines differ on/off |")
    print("|---|---|---|---|---|---|---|---|---|")
    for setting in ("on", "off"):
        r = runs[setting]
        print(f"| guard {setting} | {found['pages']} | {found['regions']} | {found['lines']} | "
              f"{r.get('guarded', 0):g} | {r.get('stopped', 0):g} | {r['length']:g} | "
              f"{len(found['truncated_regions']) if setting == 'on' else '-'} | {len(found['differing_pages'])} |")
    for item in found["truncated_regions"]:
        print(f"truncated: {item['page']} region {item['region']}: {item['lines']}")
    for item in found["differing_pages"]:
        print(f"differs: {item['page']} (page CER against its truth, guard on / off: {item['page_cer']['on']} / "
              f"{item['page_cer']['off']}): {item['changed']}")
    return 0 if all(r["returncode"] == 0 for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
