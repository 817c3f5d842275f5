"""Train the house OCR model on shards from `make_data`.

    python -m training.house_ocr.train --data data/house-ocr --out runs/house-ocr --steps 6000 --seed 0

Loss = next-character cross-entropy on the text (after `<|text|>`) + 0.3 x CTC
on the draft head. Batches are built from length-sorted pools (little padding).
Shards that appear while training runs are picked up at the next pool, so data
generation and training can overlap; for an exact rerun, generate first.
A checkpoint (`last.pt`) and a line of progress are written every
`--log-every` steps; validation (held-out fonts and corpus) reports character
error rate of greedy decoding and of the CTC draft.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from training.house_ocr import charset
from training.house_ocr.model import HouseOCR, HouseOCRConfig, image_token_count, merge_frames, prompt_ids


class Shards:
    def __init__(self, folder: Path, prefix: str = "shard"):
        self.folder, self.prefix = folder, prefix
        self.loaded: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def refresh(self) -> None:
        for path in sorted(self.folder.glob(f"{self.prefix}-*.npz")):
            if path.name not in self.loaded and not path.name.endswith(".tmp.npz"):
                with np.load(path) as data:
                    self.loaded[path.name] = (data["features"], data["offsets"], data["texts"])

    def samples(self) -> list[tuple[str, int]]:
        return [(name, i) for name, (_, offsets, _) in self.loaded.items() for i in range(len(offsets) - 1)]

    def get(self, key: tuple[str, int]) -> tuple[torch.Tensor, str]:
        features, offsets, texts = self.loaded[key[0]]
        return torch.from_numpy(features[offsets[key[1]]:offsets[key[1] + 1]].astype(np.float32)), str(texts[key[1]])


def make_batch(model: HouseOCR, items: list[tuple[torch.Tensor, str]]):
    rows, image_embeds, text_spans = [], [], []
    merged = [merge_frames(f, model.config.merge) for f, _ in items]
    for (features, text), m in zip(items, merged):
        prompt = prompt_ids(m.shape[0])
        target = charset.encode(text) + [charset.EOS_ID]
        rows.append(prompt + target)
        text_spans.append((len(prompt), len(target)))
    width = max(len(r) for r in rows)
    input_ids = torch.full((len(rows), width), charset.PAD_ID, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    for i, (row, (start, length)) in enumerate(zip(rows, text_spans)):
        input_ids[i, :len(row)] = torch.tensor(row)
        labels[i, start - 1:start - 1 + length] = torch.tensor(row[start:start + length])
    return input_ids, labels, merged


def loss_on(model: HouseOCR, items, ctc_weight: float = 0.3):
    input_ids, labels, merged = make_batch(model, items)
    image_embeds = [model.projector(m) for m in merged]
    logits = model.forward_logits(input_ids, image_embeds)
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
    # CTC on the draft head (frames padded to the longest in the batch)
    frames = [f for f, _ in items]
    lengths = torch.tensor([f.shape[0] for f in frames])
    padded = torch.nn.utils.rnn.pad_sequence(frames, batch_first=True)
    log_probs = model.ctc_head(padded).log_softmax(-1).transpose(0, 1)       # [T, B, V]
    targets = [torch.tensor(charset.encode(t) or [charset.UNK_ID]) for _, t in items]
    ctc = F.ctc_loss(log_probs, torch.cat(targets), lengths, torch.tensor([len(t) for t in targets]),
                     blank=charset.PAD_ID, zero_infinity=True)
    return ce + ctc_weight * ctc, ce.item(), ctc.item()


def edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


@torch.no_grad()
def validate(model: HouseOCR, shards: Shards, limit: int) -> dict:
    model.eval()
    errors = ctc_errors = chars = 0
    for key in shards.samples()[:limit]:
        features, text = shards.get(key)
        out = [t for t in model.greedy(features, max_new_tokens=len(text) + 20) if t != charset.EOS_ID]
        errors += edit_distance(charset.decode(out), text)
        ctc_errors += edit_distance(charset.decode(model.ctc_greedy(features)), text)
        chars += len(text)
    model.train()
    return {"val_cer": errors / max(1, chars), "val_ctc_cer": ctc_errors / max(1, chars)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--batch-tokens", type=int, default=3000, help="padded sequence tokens per batch")
    parser.add_argument("--lr", type=float, default=1.5e-3)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--log-every", type=int, default=100)
    parser.add_argument("--val-every", type=int, default=1000)
    parser.add_argument("--val-samples", type=int, default=150)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--init", type=Path, help="start from the weights of an exported model folder (for "
                        "example models/house-ocr: a fresh checkout has no training checkpoint) to fine-tune it; "
                        "its config sets the model's size, not --layers/--hidden")
    parser.add_argument("--pool-size", type=int, default=16384, help="samples drawn per pool (new shards join "
                        "at the next pool)")
    parser.add_argument("--long-weight", type=float, default=3.0, help="sampling weight of shard-long-* samples")
    parser.add_argument("--extra-val", default=None, help="a second validation set's shard prefix (eval-eu: the "
                        "held-out European lines), reported as <prefix>_cer beside val_cer")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.init is not None:
        from training.house_ocr.export import load_exported

        try:
            model = load_exported(args.init).train()
        except (OSError, KeyError, TypeError, ValueError, AssertionError) as exc:
            parser.error(f"--init {args.init}: not an exported house OCR model folder ({type(exc).__name__}: {exc})")
        config = model.config
    else:
        config = HouseOCRConfig(hidden_size=args.hidden, num_hidden_layers=args.layers,
                                intermediate_size=int(args.hidden * 2.75 // 32 * 32))
        model = HouseOCR(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    step = 0
    if args.resume and (args.out / "last.pt").exists():
        state = torch.load(args.out / "last.pt", weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
        rng.setstate(state["rng"])
    print(f"parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M", flush=True)

    def lr_at(s: int) -> float:
        if s < args.warmup:
            return args.lr * (s + 1) / args.warmup
        progress = min(1.0, (s - args.warmup) / max(1, args.steps - args.warmup))
        return args.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress)))

    train, val = Shards(args.data, "shard"), Shards(args.data, "val")
    val.refresh()
    extra = Shards(args.data, args.extra_val) if args.extra_val else None
    if extra is not None:
        extra.refresh()
    queue: list[list[tuple[str, int]]] = []
    started, window = time.time(), []
    model.train()
    while step < args.steps:
        if not queue:   # a new pool: a random draw from every sample available, cut into batches
            train.refresh()
            keys = train.samples()
            if not keys:
                time.sleep(10)
                continue
            # Full-width lines are most of a real page: their shards are drawn `long_weight` times as often.
            weights = [args.long_weight if name.startswith("shard-long") else 1.0 for name, _ in keys]
            keys = rng.choices(keys, weights=weights, k=min(args.pool_size, len(keys)))
            for pool_start in range(0, len(keys), 4096):
                pool = sorted(keys[pool_start:pool_start + 4096], key=lambda k: _length(train, k))
                batch: list[tuple[str, int]] = []
                for key in pool:
                    if batch and (len(batch) + 1) * _length(train, key) > args.batch_tokens:
                        queue.append(batch)
                        batch = []
                    batch.append(key)
                if batch:
                    queue.append(batch)
            rng.shuffle(queue)
        keys = queue.pop()
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
        loss, ce, ctc = loss_on(model, [train.get(k) for k in keys])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        step += 1
        window.append((ce, ctc, len(keys)))
        if step % args.log_every == 0 or step == args.steps:
            record = {"step": step, "ce": sum(w[0] for w in window) / len(window),
                      "ctc": sum(w[1] for w in window) / len(window), "lr": lr_at(step),
                      "samples_per_batch": sum(w[2] for w in window) / len(window),
                      "train_samples_available": len(train.samples()), "elapsed_s": round(time.time() - started)}
            window = []
            if step % args.val_every == 0 or step == args.steps:
                record.update(validate(model, val, args.val_samples))
                if extra is not None:
                    record.update({f"{args.extra_val}_{key[4:]}": value
                                   for key, value in validate(model, extra, args.val_samples).items()})
            print(json.dumps(record), flush=True)
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                        "rng": rng.getstate(), "config": config.to_dict()}, args.out / "last.tmp.pt")
            (args.out / "last.tmp.pt").replace(args.out / "last.pt")


def _length(shards: Shards, key: tuple[str, int]) -> int:
    features, offsets, texts = shards.loaded[key[0]]
    frames = int(offsets[key[1] + 1] - offsets[key[1]])
    return image_token_count(frames) + 5 + len(texts[key[1]]) + 1


if __name__ == "__main__":
    main()
