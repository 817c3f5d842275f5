"""Small helpers the Triton kernels share."""
from __future__ import annotations

import os

import torch


def next_pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def dot_precision(dtype: torch.dtype) -> str:
    # fp32 inputs keep fp32 products (tf32 would lose ~3 digits); bf16/fp16 run on tensor cores anyway.
    return "ieee" if dtype == torch.float32 else "tf32"


def interpreting() -> bool:
    """Whether Triton kernels run under its CPU interpreter (TRITON_INTERPRET=1, read when
    the kernel modules are imported)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def check_device(*tensors: torch.Tensor) -> None:
    """Kernels run on CUDA tensors, or on CPU tensors only under the interpreter: never silently elsewhere."""
    for t in tensors:
        if t.device.type != "cuda" and not interpreting():
            raise RuntimeError(f"a Triton kernel got a {t.device.type} tensor; on CPU, kernels run only "
                               "under TRITON_INTERPRET=1 (tests), and the engine uses the torch backend there")
