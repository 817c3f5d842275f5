"""Generate training data: typeset lines -> frozen-encoder features, in shards.

    python -m training.house_ocr.make_data --out data/house-ocr --samples 120000 --seed 0

Each shard `shard-NNNNN.npz` holds `features` (float16 [total_frames, 120]),
`offsets` (int64 [n + 1]) and `texts`. Shards are written atomically, so
training can start on the first ones while later ones are being made. Shard k
is generated from seed (seed, k) alone: any shard can be regenerated exactly.
`--held-out` makes the validation set from the held-out fonts and corpus; `--long` full-width
lines; `--technical` small-print markup, code, index and bibliography lines; `--european`
lines in European languages (`corpus.TrainingText.european_line`; with `--held-out`, the
held-out message catalogues and fonts, as `eval-eu-*` shards the training run's own
validation does not read); `--repeats` runs of one character, short units and long numbers
(`corpus.TrainingText.repeat_line`).
"""
from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path

import numpy as np

from engine.models.line_encoder import LineEncoder
from training.house_ocr import corpus, fonts, render


def make_shard(index: int, size: int, seed: int, held_out: bool, encoder: LineEncoder,
               long_lines: bool = False, technical: bool = False, european: bool = False,
               repeats: bool = False) -> dict[str, np.ndarray]:
    rng = random.Random(f"{seed}/{index}/{held_out}" + ("/long" if long_lines else "")
                        + ("/technical" if technical else "") + ("/european" if european else "")
                        + ("/repeats" if repeats else ""))
    np.random.seed(rng.getrandbits(32))
    font_set = fonts.held_out_fonts() if held_out else fonts.training_fonts()
    text_source = corpus.TrainingText(seed * 100003 + index)
    features, texts, offsets = [], [], [0]
    for _ in range(size):
        if european and held_out:
            text = corpus.window(corpus.european_prose(held_out=True), rng, rng.choice([rng.randint(8, 40),
                                                                                     rng.randint(30, 120)]))
        elif european:
            text = text_source.european_line()
        elif repeats:
            text = text_source.repeat_line()
        elif held_out:
            text = corpus.window(corpus.licence_prose(), rng, rng.choice([rng.randint(3, 20), rng.randint(20, 90)]))
        elif long_lines:
            text = text_source.long_line()
        elif technical:
            text = text_source.technical_line()
        else:
            text = text_source.line()
        if technical:   # small print (references, indexes, listings), mostly scanned
            crop, text = render.sample_crop(text, font_set, rng, scan_probability=0.7, points_range=(5.5, 11.0))
        else:
            crop, text = render.sample_crop(text, font_set, rng)
        feats = encoder.encode(crop)
        features.append(feats.astype(np.float16))
        texts.append(text)
        offsets.append(offsets[-1] + feats.shape[0])
    return {"features": np.concatenate(features), "offsets": np.asarray(offsets, dtype=np.int64),
            "texts": np.asarray(texts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--samples", type=int, default=120_000)
    parser.add_argument("--shard-size", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--held-out", action="store_true", help="validation data: held-out fonts and corpus")
    parser.add_argument("--long", action="store_true", help="full-width lines of 70-150 characters "
                        "(shards named shard-long-*)")
    parser.add_argument("--technical", action="store_true", help="markup and program source, index entries, "
                        "bibliography entries and maths in small print, mostly scan-like (shards named shard-tech-*)")
    parser.add_argument("--european", action="store_true", help="lines in European languages (shards named "
                        "shard-eu-*; with --held-out, eval-eu-*)")
    parser.add_argument("--repeats", action="store_true", help="runs of one character or a short unit, long "
                        "numbers, leaders (shards named shard-rep-*)")
    args = parser.parse_args()
    if args.long + args.technical + args.european + args.repeats > 1:
        parser.error("--long, --technical, --european and --repeats make different shards: give one")
    if args.repeats and args.held_out:
        parser.error("--repeats makes training shards only")
    if args.european and args.held_out and not corpus.european_prose(held_out=True):
        parser.error("--european --held-out: no held-out message catalogues under /usr/share/locale")
    args.out.mkdir(parents=True, exist_ok=True)
    encoder = LineEncoder(args.threads)
    shards = -(-args.samples // args.shard_size)
    if args.european:
        prefix = "eval-eu" if args.held_out else "shard-eu"
    elif args.repeats:
        prefix = "shard-rep"
    else:
        prefix = "val" if args.held_out else ("shard-long" if args.long else "shard-tech" if args.technical else "shard")
    started = time.time()
    for index in range(shards):
        path = args.out / f"{prefix}-{index:05d}.npz"
        if path.exists():
            continue
        size = min(args.shard_size, args.samples - index * args.shard_size)
        shard = make_shard(index, size, args.seed, args.held_out, encoder, args.long, args.technical, args.european,
                           args.repeats)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, **shard)
        os.replace(tmp, path)
        print(f"{path.name}: {size} samples, {shard['offsets'][-1]} frames, {time.time() - started:.0f} s",
              flush=True)


if __name__ == "__main__":
    main()
