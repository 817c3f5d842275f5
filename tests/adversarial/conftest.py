"""The adversarial suite (docs/RELIABILITY.md): fuzzing, a canary leak storm, kill -9 loops, slow clients.

Every part is bounded so the whole suite fits the CI budget on two cores.
`OCRSERVE_ADVERSARIAL_SCALE=N` (default 1) multiplies each part's work (examples,
requests, kills, fuzzing seconds) for a longer run by hand; the figures in
docs/RELIABILITY.md say what scale 1 does.
"""
from __future__ import annotations

import os

import pytest

SCALE = max(1, int(os.environ.get("OCRSERVE_ADVERSARIAL_SCALE", "1")))


def scaled(n: int | float) -> int | float:
    """`n` at scale 1, `n * SCALE` in a long run."""
    return type(n)(n * SCALE)


def report(name: str, **figures) -> None:
    """One line of figures per part, printed so `pytest -s` shows what RELIABILITY.md quotes."""
    print(f"\n[adversarial] {name}: " + ", ".join(f"{k}={v}" for k, v in figures.items()), flush=True)


@pytest.fixture(scope="session")
def adversarial_scale() -> int:
    return SCALE
