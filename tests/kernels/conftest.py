"""Kernel tests run natively on a GPU, and under Triton's interpreter on CPU
tensors here (TRITON_INTERPRET must be set before the kernel modules are
imported). Shapes stay tiny: the interpreter runs each program in Python."""
from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.fixture
def device() -> torch.device:
    return DEVICE
