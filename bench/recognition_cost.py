"""What one line costs each recogniser: the house model served by our engine against
Tesseract, on the same pipeline crops, CPU and wall time per crop, side by side.

    .venv/bin/python bench/recognition_cost.py --pages 4

Crops: every detected line of the first `--pages` pages of bench/house_ocr_eval.py
(clean and scan-like, cut by the page pipeline at the default DPI), handed to
each recogniser a page at a time, as the page pipeline does. Both recognisers get
the machine's two cores: Tesseract as two single-threaded processes (the
pipeline's setting), the engine with two threads. CPU is counted over every
process involved (for the house model: the engine server and this process's
client, whose own share is also printed; for Tesseract: its processes). The engine's
caches are flushed before each pass, so no pass reuses what an earlier one computed
for the same crops (`--client` sends them one request per crop instead of in batch requests, as
BMP or as PNG, to measure what each costs). The house model's line encoder is also
timed on its own (one thread, in this process) over the same crops, so the
table shows how much of Tesseract's whole per-line budget the frozen encoder
alone takes; and the house model's whole compute (request building and decoder
steps, in this process on one thread, no HTTP) is timed the same way, its floor
without any serving cost. The page stages (render, layout, lines) are not in these figures:
they are the same for both recognisers. Prints a table, then the figures as one
JSON line.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from house_ocr_eval import cpu_seconds  # noqa: E402
from line_encoder import crops_by_page  # noqa: E402

from app.local_services import child_env, start_engine  # noqa: E402
from engine.models import line_encoder  # noqa: E402
from vision.layout import RecognitionTask  # noqa: E402
from workers.recognizers.base import RecognitionItem  # noqa: E402
from workers.recognizers.registry import build_recognizer  # noqa: E402
from workers.settings import Settings  # noqa: E402


def measure(recognizer, pages: list[list[RecognitionItem]], process: psutil.Process | None,
            engine_url: str | None = None) -> dict:
    recognizer.recognize(pages[0][:8])   # warm-up: model loads, first requests
    if engine_url is not None:
        # The engine keeps what it computed for an image by its hash (prefix cache, encoder features):
        # every pass, the first included, must see these crops as new.
        httpx.post(engine_url.removesuffix("/v1") + "/flush_cache", timeout=60).raise_for_status()
    cpu, own, wall, failed = cpu_seconds(process), time.process_time(), time.perf_counter(), 0
    for items in pages:
        failed += sum(not outcome.ok for outcome in recognizer.recognize(items))
    crops = sum(map(len, pages))
    return {"cpu_ms_per_crop": (cpu_seconds(process) - cpu) * 1000 / crops,
            "client_cpu_ms_per_crop": (time.process_time() - own) * 1000 / crops,
            "wall_ms_per_crop": (time.perf_counter() - wall) * 1000 / crops, "failed": failed}


def engine_parts(images: list[list], in_flight: int) -> dict:
    """The house model's compute on its own: the engine in this process on one thread (no HTTP,
    no second thread spin-waiting, so its CPU time is work), CPU per crop of building the
    requests (image preprocessing, the line encoder, the CTC draft) and of the decoder's steps,
    with up to `in_flight` lines in flight as the recogniser client keeps them; and the tokens
    the decoder computes per crop."""
    import torch

    from engine.config import EngineConfig
    from engine.engine import Engine
    from engine.sampling_params import SamplingParams

    torch.set_num_threads(1)
    engine = Engine(EngineConfig(model="house-ocr", num_threads=1))
    prompt = engine.tokenizer.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Text Recognition:"}]}],
        add_generation_prompt=True, tokenize=False)
    params = SamplingParams(temperature=0.0, max_tokens=512)
    crops = [image for page in images for image in page]

    def run(requests) -> tuple[float, int]:
        pending, active, computed = list(requests), 0, 0
        cpu = time.process_time()
        while pending or engine.has_work:
            while pending and active < in_flight:
                engine.add_request(pending.pop(0), params)
                active += 1
            for output in engine.step():
                if output.finished:
                    active -= 1
                    computed += output.num_prompt_tokens - output.num_cached_tokens + len(output.token_ids)
        return time.process_time() - cpu, computed

    run([engine.make_request(prompt, params, images=[crop]) for crop in crops[:8]])   # warm-up
    engine.flush_cache()
    started = time.process_time()
    requests = [engine.make_request(prompt, params, images=[crop]) for crop in crops]
    build = time.process_time() - started
    steps, tokens = run(requests)
    return {"build_cpu_ms_per_crop": build * 1000 / len(crops), "steps_cpu_ms_per_crop": steps * 1000 / len(crops),
            "tokens_per_crop": tokens / len(crops)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--client", choices=("batch", "bmp", "png"), default="batch",
                        help="how the recogniser sends crops: as it does (batch requests of BMP crops), or one "
                             "request per crop as a BMP, or as a PNG (the client before issue 18)")
    args = parser.parse_args()

    settings = Settings(data_dir=Path(tempfile.mkdtemp(prefix="ocrserve-recognition-cost-")), recognizer="house")
    images = crops_by_page(args.pages, settings.render_dpi)
    pages = [[RecognitionItem(image, RecognitionTask.TEXT, True) for image in page] for page in images]
    crops = sum(map(len, pages))

    engine, url = start_engine(settings, child_env(settings), 0, settings.data_dir / "engine.log",
                               extra_args=("--num-threads", str(args.threads)))
    try:
        house = build_recognizer(settings.model_copy(update={"engine_url": url}))
        house.check()
        if args.client != "batch":
            house.uses_batch, house.image_format = False, args.client.upper()
        tesseract = build_recognizer(settings.model_copy(update={"recognizer": "tesseract"}))
        # twice, interleaved, so drift on a shared machine hits both
        runs: dict[str, list[dict]] = {"tesseract": [], "house": []}
        for _ in range(2):
            runs["tesseract"].append(measure(tesseract, pages, None))
            runs["house"].append(measure(house, pages, psutil.Process(engine.popen.pid), url))
    finally:
        engine.stop()

    encoder = line_encoder.LineEncoder(1)
    inputs = [line_encoder.preprocess(np.asarray(image.convert("RGB"))) for page in images for image in page]
    encoder.run(inputs[0])
    encoder_ms = []
    for _ in range(2):
        started = time.process_time()
        for pixels in inputs:
            encoder.run(pixels)
        encoder_ms.append((time.process_time() - started) * 1000 / crops)
    in_process = engine_parts(images, settings.recognizer_max_concurrency)

    def best(name: str, key: str) -> float:
        return min(run[key] for run in runs[name])

    print(f"{crops} line crops from {args.pages} pages x clean/scan-like at {settings.render_dpi:g} DPI, "
          f"mean network input width {np.mean([x.shape[3] for x in inputs]):.0f} px; two runs each, interleaved; "
          f"client: {args.client}")
    print(f"{'recogniser':<46} {'CPU ms/crop':>16} {'wall ms/crop':>16}")
    for name, label in (("tesseract", "Tesseract (2 processes)"), ("house", "house model via the engine (2 threads)")):
        cpu = " ".join(f"{run['cpu_ms_per_crop']:7.1f}" for run in runs[name])
        wall = " ".join(f"{run['wall_ms_per_crop']:7.1f}" for run in runs[name])
        print(f"{label:<46} {cpu:>16} {wall:>16}")
    client = " ".join(f"{run['client_cpu_ms_per_crop']:7.1f}" for run in runs["house"])
    print(f"{'  of which the recogniser client (this process)':<46} {client:>16}")
    print(f"{'  its line encoder alone (1 thread)':<46} {' '.join(f'{ms:7.1f}' for ms in encoder_ms):>16}")
    floor = in_process["build_cpu_ms_per_crop"] + in_process["steps_cpu_ms_per_crop"]
    print(f"{'  in process, 1 thread: building the requests':<46} {in_process['build_cpu_ms_per_crop']:>7.1f}"
          "   (encoder, CTC draft, prompt)")
    print(f"{'  in process, 1 thread: the decoder steps':<46} {in_process['steps_cpu_ms_per_crop']:>7.1f}"
          f"   ({in_process['tokens_per_crop']:.0f} tokens per crop through the decoder)")
    print(f"{'  its compute without serving (the two above)':<46} {floor:>7.1f}")
    encoder_share = min(encoder_ms) / best("tesseract", "cpu_ms_per_crop")
    print(f"house / Tesseract CPU per crop {best('house', 'cpu_ms_per_crop') / best('tesseract', 'cpu_ms_per_crop'):.2f}x,"
          f" wall {best('house', 'wall_ms_per_crop') / best('tesseract', 'wall_ms_per_crop'):.2f}x; the house "
          f"encoder alone is {encoder_share:.2f}x Tesseract's whole CPU per crop, its compute without serving "
          f"{floor / best('tesseract', 'cpu_ms_per_crop'):.2f}x")
    failed = {name: [run["failed"] for run in value] for name, value in runs.items()}
    print(json.dumps({"crops": crops, "pages": args.pages, "client": args.client, "runs": runs,
                      "encoder_cpu_ms_per_crop": encoder_ms,
                      "encoder_share_of_tesseract_cpu": encoder_share, "in_process": in_process,
                      "compute_share_of_tesseract_cpu": floor / best("tesseract", "cpu_ms_per_crop"),
                      "failed": failed}))
    return 0 if not any(sum(v) for v in failed.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
