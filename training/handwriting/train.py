"""Train the handwriting line classifier and export it to ONNX for `vision.handwriting`.

    .venv/bin/python -m training.handwriting.train --out models/handwriting

A small CNN over a line crop scaled to `HEIGHT` pixels (ink 1, paper 0), averaged over its
width, so it takes lines of any length. Trained on generated lines in the training fonts
(`training.handwriting.data`), its figures are on lines in held-out fonts of both kinds; the
run prints them and writes them to OUT/metrics.json: on handwriting written glyph by glyph
(as in training) and on the fonts' own glyphs set like print (the strict figure).
"""
from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from training.handwriting.data import dataset
from vision.handwriting import HEIGHT, TRAIN_WIDTH, normalise_line


class LineClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()

        def block(cin: int, cout: int, pool: bool) -> list[nn.Module]:
            layers: list[nn.Module] = [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU()]
            return layers + [nn.MaxPool2d(2)] if pool else layers

        self.features = nn.Sequential(*block(1, 16, True), *block(16, 32, True), *block(32, 64, True),
                                      *block(64, 64, False))
        self.head = nn.Linear(64, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:   # [batch, 1, HEIGHT, width] -> [batch] logits
        return self.head(self.features(x).mean(dim=(2, 3))).squeeze(1)


def _batch(images: list[np.ndarray], rng: random.Random) -> torch.Tensor:
    """Fixed-width crops for training: a random window of each line, or the line padded."""
    out = np.zeros((len(images), 1, HEIGHT, TRAIN_WIDTH), dtype=np.float32)
    for i, image in enumerate(images):
        line = normalise_line(image)
        if line.shape[1] > TRAIN_WIDTH:
            start = rng.randint(0, line.shape[1] - TRAIN_WIDTH)
            line = line[:, start:start + TRAIN_WIDTH]
        out[i, 0, :, :line.shape[1]] = line
    return torch.from_numpy(out)


def evaluate(model: nn.Module, images: list[np.ndarray], labels: np.ndarray) -> dict[str, float]:
    model.eval()
    with torch.no_grad():
        scores = np.array([torch.sigmoid(model(torch.from_numpy(normalise_line(image)[None, None]))).item()
                           for image in images])
    predicted = scores >= 0.5
    truth = labels >= 0.5
    tp, fp, fn = int((predicted & truth).sum()), int((predicted & ~truth).sum()), int((~predicted & truth).sum())
    return {"lines": len(images), "accuracy": float((predicted == truth).mean()),
            "precision": tp / max(1, tp + fp), "recall": tp / max(1, tp + fn)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("models/handwriting"))
    parser.add_argument("--train-lines", type=int, default=8000)
    parser.add_argument("--eval-lines", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    started = time.time()
    train_images, train_labels = dataset(args.train_lines, held_out=False, seed=args.seed)
    eval_images, eval_labels = dataset(args.eval_lines, held_out=True, seed=args.seed + 1)
    strict_images, strict_labels = dataset(args.eval_lines, held_out=True, seed=args.seed + 2, jitter=False)
    print(f"data: {len(train_images)} train, {len(eval_images)} held-out lines in {time.time() - started:.0f} s",
          flush=True)
    model = LineClassifier()
    optimiser = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    steps = args.epochs * len(train_images) // 64
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, max_lr=3e-3, total_steps=steps)
    loss_fn = nn.BCEWithLogitsLoss()
    order = list(range(len(train_images)))
    step = 0
    for epoch in range(args.epochs):
        model.train()
        rng.shuffle(order)
        for start in range(0, len(order) - 63, 64):
            ids = order[start:start + 64]
            loss = loss_fn(model(_batch([train_images[i] for i in ids], rng)), torch.from_numpy(train_labels[ids]))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            step += 1
            if step % 50 == 0:
                print(f"epoch {epoch} step {step}/{steps} loss {loss.item():.4f} ({time.time() - started:.0f} s)",
                      flush=True)
        print(f"epoch {epoch}: held out {evaluate(model, eval_images[:300], eval_labels[:300])}, unjittered "
              f"{evaluate(model, strict_images[:300], strict_labels[:300])}", flush=True)
    metrics = {"held_out_fonts": evaluate(model, eval_images, eval_labels),
               "held_out_fonts_unjittered": evaluate(model, strict_images, strict_labels),
               "train_fonts_sample": evaluate(model, train_images[:1000], train_labels[:1000]),
               "train_lines": len(train_images), "epochs": args.epochs, "seconds": round(time.time() - started)}
    print(json.dumps(metrics, indent=1), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    model.eval()
    torch.onnx.export(model, torch.zeros(1, 1, HEIGHT, TRAIN_WIDTH), args.out / "line_classifier.onnx",
                      input_names=["line"], output_names=["logit"], dynamic_axes={"line": {0: "batch", 3: "width"},
                                                                                   "logit": {0: "batch"}},
                      opset_version=17, dynamo=False)
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")


if __name__ == "__main__":
    main()
