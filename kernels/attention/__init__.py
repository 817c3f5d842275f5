"""Attention backends: `make_attention_backend(name, ...)` gives the model the one
object it calls. "torch": the CPU path; "triton": the CUDA path."""
from __future__ import annotations

import torch

from kernels.attention.base import AttentionBackend
from kernels.attention.torch_backend import TorchAttentionBackend

ATTENTION_BACKENDS = ("torch", "triton")


def make_attention_backend(name: str, scale: float, device: torch.device | str,
                           num_kv_heads: int = 1) -> AttentionBackend:
    if name == "torch":
        return TorchAttentionBackend(scale, device)
    if name == "triton":  # imported here: triton is only needed where it is used
        from kernels.attention.triton_backend import TritonAttentionBackend

        return TritonAttentionBackend(scale, device, num_kv_heads)
    raise ValueError(f"attention backend must be one of {ATTENTION_BACKENDS}, got {name!r}")


__all__ = ["ATTENTION_BACKENDS", "AttentionBackend", "make_attention_backend"]
