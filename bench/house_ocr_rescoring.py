"""The house model's decoding rule on held-out lines: plain greedy, the CTC
draft alone, and hybrid CTC/attention rescoring (keep whichever of the two
readings scores higher, w log P_ctc + (1 - w) log P_dec) at several weights w,
side by side on the same lines.

    .venv/bin/python bench/house_ocr_rescoring.py --lines 2000

Lines: `make_data --held-out` shards (fonts and corpus the model never saw,
60% aged like scans), generated into --data if missing. Each line is read once
by the shipped weights (training/house_ocr/model.py, greedy with a KV cache),
its CTC draft taken, and both readings scored once; every weight then picks
from the same readings. Prints a table, then the figures as one JSON line.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.loader import resolve_model  # noqa: E402
from training.house_ocr import charset  # noqa: E402
from training.house_ocr.export import load_exported  # noqa: E402
from training.house_ocr.model import CTC_WEIGHT, ctc_log_prob, merge_frames, prompt_ids  # noqa: E402
from training.house_ocr.train import edit_distance  # noqa: E402

WEIGHTS = (0.1, 0.2, 0.3, 0.5, 0.7)


def held_out_lines(data: Path, count: int) -> list[tuple[np.ndarray, str]]:
    shards = sorted(data.glob("val-*.npz"))
    if sum(len(np.load(path)["texts"]) for path in shards) < count:
        subprocess.run([sys.executable, "-m", "training.house_ocr.make_data", "--out", str(data), "--samples",
                        str(count), "--shard-size", "1000", "--held-out", "--threads", "2"], check=True,
                       cwd=Path(__file__).resolve().parent.parent)
        shards = sorted(data.glob("val-*.npz"))
    lines = []
    for path in shards:
        shard = np.load(path)
        offsets = shard["offsets"]
        for i, text in enumerate(shard["texts"]):
            lines.append((shard["features"][offsets[i]:offsets[i + 1]].astype(np.float32), str(text)))
    return lines[:count]


@torch.no_grad()
def greedy_with_log_prob(model, image: torch.Tensor, max_new_tokens: int = 256) -> tuple[list[int], float]:
    """The reference's greedy reading (the same tokens as `HouseOCR.greedy`, with a KV cache so
    that thousands of lines take minutes) and its decoder log-probability."""
    embeds = model.embed(torch.tensor([prompt_ids(image.shape[0])]), [image])
    out = model.decoder(inputs_embeds=embeds, use_cache=True)
    tokens: list[int] = []
    total = 0.0
    for _ in range(max_new_tokens):
        log_probs = out.logits[0, -1].log_softmax(-1)
        token = int(log_probs.argmax())
        tokens.append(token)
        total += float(log_probs[token])
        if token == charset.EOS_ID:
            break
        out = model.decoder(input_ids=torch.tensor([[token]]), cache=out.cache, use_cache=True)
    return tokens, total


@torch.no_grad()
def decoder_log_prob(model, image: torch.Tensor, tokens: list[int]) -> float:
    prompt = prompt_ids(image.shape[0])
    log_probs = model.forward_logits(torch.tensor([prompt + tokens]), [image])[0].log_softmax(-1)
    return float(log_probs[len(prompt) - 1:-1].gather(1, torch.tensor(tokens)[:, None]).sum())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--data", type=Path, default=Path("data/house-ocr-heldout"))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = load_exported(resolve_model("house-ocr"))
    lines = held_out_lines(args.data, args.lines)

    started = time.perf_counter()
    readings = []
    with torch.no_grad():
        for features, text in lines:
            frames = torch.from_numpy(features)
            image = model.projector(merge_frames(frames, model.config.merge))
            greedy, greedy_dec = greedy_with_log_prob(model, image)
            draft = model.ctc_greedy(frames) + [charset.EOS_ID]
            ctc = model.ctc_head(frames).log_softmax(-1)
            same = draft == greedy
            readings.append({
                "text": text, "greedy": charset.decode(greedy), "draft": charset.decode(draft),
                "ends": greedy[-1:] == [charset.EOS_ID],
                "greedy_dec": greedy_dec, "draft_dec": greedy_dec if same else decoder_log_prob(model, image, draft),
                "greedy_ctc": ctc_log_prob(ctc, greedy), "draft_ctc": ctc_log_prob(ctc, draft)})
    seconds = time.perf_counter() - started
    characters = sum(len(r["text"]) for r in readings)

    def cer(pick) -> float:
        return sum(edit_distance(pick(r), r["text"]) for r in readings) / max(1, characters)

    def rescored(w: float):
        def pick(r: dict) -> str:
            if r["greedy"] == r["draft"] or not r["ends"]:
                return r["greedy"]
            mine = w * r["greedy_ctc"] + (1 - w) * r["greedy_dec"]
            theirs = w * r["draft_ctc"] + (1 - w) * r["draft_dec"]
            return r["draft"] if theirs > mine else r["greedy"]
        return pick

    rows = {"decoder greedy": cer(lambda r: r["greedy"]), "CTC draft": cer(lambda r: r["draft"])}
    rows.update({f"rescored, w = {w:g}": cer(rescored(w)) for w in WEIGHTS})
    rows["best of the two (oracle)"] = sum(
        min(edit_distance(r["greedy"], r["text"]), edit_distance(r["draft"], r["text"])) for r in readings
    ) / max(1, characters)
    differ = sum(r["greedy"] != r["draft"] for r in readings)
    print(f"{len(readings)} held-out lines ({characters} characters), decoder and draft differ on {differ}; "
          f"read in {seconds:.0f} s; shipped weight w = {CTC_WEIGHT:g}")
    print(f"{'decoding':<30} {'CER':>7}")
    for name, value in rows.items():
        print(f"{name:<30} {value:>7.2%}")
    print(json.dumps({"lines": len(readings), "characters": characters, "differ": differ, "cer": rows,
                      "shipped_weight": CTC_WEIGHT}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
