"""Fine-tuning the shipped house OCR model: `train --init` starts from its weights."""
from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from engine.loader import resolve_model
from training.house_ocr import train
from training.house_ocr.export import load_checkpoint, load_exported


def write_shard(path, texts: list[str], rng: np.random.Generator) -> None:
    frames = [rng.integers(20, 40) for _ in texts]
    np.savez(path, features=rng.standard_normal((sum(frames), 120)).astype(np.float16),
             offsets=np.concatenate([[0], np.cumsum(frames)]).astype(np.int64), texts=np.asarray(texts))


def run_train(monkeypatch, *args: str) -> None:
    monkeypatch.setattr(sys, "argv", ["train", *args])
    train.main()


def test_init_fine_tunes_the_shipped_weights(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    write_shard(tmp_path / "shard-00000.npz", ["Invoice 42", "Total: 17.50", "a line"], rng)
    write_shard(tmp_path / "val-00000.npz", ["held out"], rng)
    # One step at a vanishing learning rate: the checkpoint holds the shipped weights, not a fresh model.
    run_train(monkeypatch, "--data", str(tmp_path), "--out", str(tmp_path / "run"),
              "--init", str(resolve_model("house-ocr")), "--steps", "1", "--lr", "1e-12", "--warmup", "1", "--threads", "1", "--log-every", "1",
              "--val-samples", "1", "--layers", "1")
    tuned, shipped = load_checkpoint(tmp_path / "run" / "last.pt"), load_exported(resolve_model("house-ocr"))
    assert tuned.config == shipped.config   # the shipped size, whatever --layers says
    for (name, a), (_, b) in zip(tuned.state_dict().items(), shipped.state_dict().items()):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6, msg=name)


def test_init_refuses_a_folder_that_is_not_an_exported_model(tmp_path, monkeypatch, capsys):
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "config.json").write_text('{"hidden_size": "wide"}')
    for folder in (tmp_path / "missing", tmp_path / "garbage"):
        with pytest.raises(SystemExit):
            run_train(monkeypatch, "--data", str(tmp_path), "--out", str(tmp_path / "run"), "--init", str(folder))
        assert "not an exported house OCR model folder" in capsys.readouterr().err
