"""Fused SiLU gate of the SwiGLU MLP, in Triton: silu(gate) * up from the fused
gate_up projection [rows, 2 * inter] (gate first, as Llama's and GLM's weights
are stacked), without materialising silu(gate)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from kernels.triton_utils import check_device


@triton.jit
def _silu_gate_kernel(X, OUT, stride_x, stride_o, inter, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < inter
    gate = tl.load(X + row * stride_x + offs, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(X + row * stride_x + inter + offs, mask=mask, other=0.0).to(tl.float32)
    out = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(OUT + row * stride_o + offs, out.to(OUT.dtype.element_ty), mask=mask)


def silu_gate(gate_up: torch.Tensor) -> torch.Tensor:
    """gate_up [rows, 2 * inter] -> [rows, inter]."""
    if gate_up.dim() != 2 or gate_up.shape[1] % 2:
        raise ValueError(f"gate_up must be [rows, 2 * inter], got {tuple(gate_up.shape)}")
    if gate_up.stride(-1) != 1:
        raise ValueError("gate_up must be contiguous in its last dim")
    check_device(gate_up)
    rows, inter = gate_up.shape[0], gate_up.shape[1] // 2
    out = torch.empty(rows, inter, dtype=gate_up.dtype, device=gate_up.device)
    if rows == 0 or inter == 0:
        return out
    block = 1024
    _silu_gate_kernel[(rows, triton.cdiv(inter, block))](gate_up, out, gate_up.stride(0), out.stride(0), inter,
                                                         BLOCK=block)
    return out


def silu_gate_reference(gate_up: torch.Tensor) -> torch.Tensor:
    gate, up = gate_up.chunk(2, dim=-1)
    return F.silu(gate) * up
