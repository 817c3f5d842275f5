"""Rotary position embedding in Triton, in place on q or k, including
Qwen2-VL/GLM-V multimodal RoPE (M-RoPE).

Tables are per frequency: cos/sin [max_positions, rotary_dim / 2]. A token has
one position ([tokens]) or three ([3, tokens]: temporal, height, width); with
three, frequencies [0, s0) rotate by the temporal position, [s0, s0 + s1) by
the height and the rest by the width (`sections` = (s0, s1, s2)). Frequency j
pairs dims (j, j + rotary_dim/2) (half split, Llama/Qwen) or (2j, 2j + 1)
(`interleaved`, GLM); dims past rotary_dim pass through untouched."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.triton_utils import check_device, next_pow2


@triton.jit
def _rotary_kernel(X, POS, COS, SIN, stride_xt, stride_xh, stride_p, stride_c,
                   NUM_HEADS: tl.constexpr, HALF: tl.constexpr, SEC0: tl.constexpr, SEC1: tl.constexpr,
                   INTERLEAVED: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_F: tl.constexpr):
    t = tl.program_id(0)
    f = tl.arange(0, BLOCK_F)
    f_mask = f < HALF
    section = tl.where(f < SEC0, 0, tl.where(f < SEC0 + SEC1, 1, 2))
    pos = tl.load(POS + section * stride_p + t, mask=f_mask, other=0).to(tl.int64)
    cos = tl.load(COS + pos * stride_c + f, mask=f_mask, other=0.0).to(tl.float32)[None, :]
    sin = tl.load(SIN + pos * stride_c + f, mask=f_mask, other=0.0).to(tl.float32)[None, :]
    h = tl.arange(0, BLOCK_H)
    mask = (h < NUM_HEADS)[:, None] & f_mask[None, :]
    if INTERLEAVED:
        first = 2 * f
        second = 2 * f + 1
    else:
        first = f
        second = f + HALF
    row = X + t * stride_xt + h[:, None] * stride_xh
    x1 = tl.load(row + first[None, :], mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(row + second[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(row + first[None, :], (x1 * cos - x2 * sin).to(X.dtype.element_ty), mask=mask)
    tl.store(row + second[None, :], (x2 * cos + x1 * sin).to(X.dtype.element_ty), mask=mask)


def _check(x, positions, cos, sin, sections):
    if x.dim() != 3 or x.stride(-1) != 1:
        raise ValueError(f"x must be [tokens, heads, head_dim], contiguous in head_dim, got {tuple(x.shape)}")
    if cos.shape != sin.shape or cos.dim() != 2 or cos.stride() != sin.stride() or cos.stride(-1) != 1:
        raise ValueError(f"cos/sin must be one [max_positions, rotary_dim/2] layout, got {tuple(cos.shape)}")
    half = cos.shape[1]
    if 2 * half > x.shape[2]:
        raise ValueError(f"rotary_dim {2 * half} is larger than head_dim {x.shape[2]}")
    if positions.shape not in ((x.shape[0],), (3, x.shape[0])):
        raise ValueError(f"positions {tuple(positions.shape)} must be [tokens] or [3, tokens] for {x.shape[0]} tokens")
    if positions.dim() == 2 and (sections is None or len(sections) != 3 or sum(sections) != half):
        raise ValueError(f"M-RoPE needs 3 sections summing to rotary_dim/2 = {half}, got {sections}")
    return half


def apply_rotary_(x: torch.Tensor, positions: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                  sections: tuple[int, int, int] | None = None, interleaved: bool = False) -> torch.Tensor:
    """Rotate x [tokens, heads, head_dim] in place; returns x."""
    half = _check(x, positions, cos, sin, sections)
    check_device(x, cos)
    if x.shape[0] == 0 or x.shape[1] == 0:
        return x
    if positions.dim() == 1:
        sec0, sec1, stride_p = half, 0, 0
    else:
        positions = positions.contiguous()
        sec0, sec1, stride_p = sections[0], sections[1], positions.stride(0)
    _rotary_kernel[(x.shape[0],)](
        x, positions, cos, sin, x.stride(0), x.stride(1), stride_p, cos.stride(0),
        NUM_HEADS=x.shape[1], HALF=half, SEC0=sec0, SEC1=sec1, INTERLEAVED=interleaved,
        BLOCK_H=next_pow2(x.shape[1]), BLOCK_F=next_pow2(half),
    )
    return x


def apply_rotary_reference(x: torch.Tensor, positions: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                           sections: tuple[int, int, int] | None = None, interleaved: bool = False) -> torch.Tensor:
    """The same rotation in torch, out of place."""
    half = _check(x, positions, cos, sin, sections)
    if positions.dim() == 1:
        c, s = cos[positions], sin[positions]                         # [tokens, half]
    else:
        section = torch.repeat_interleave(torch.arange(3), torch.tensor(sections)).to(x.device)  # [half]
        rows = positions[section]                                     # [half, tokens]
        freq = torch.arange(half, device=x.device)[:, None]
        c, s = cos[rows, freq].T, sin[rows, freq].T
    c, s = c.float().unsqueeze(1), s.float().unsqueeze(1)            # [tokens, 1, half]
    xf = x.float()
    if interleaved:
        x1, x2 = xf[..., 0:2 * half:2], xf[..., 1:2 * half:2]
        rot = torch.stack((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).flatten(-2)
    else:
        x1, x2 = xf[..., :half], xf[..., half:2 * half]
        rot = torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)
    return torch.cat((rot.to(x.dtype), x[..., 2 * half:]), dim=-1)
