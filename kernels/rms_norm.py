"""Fused RMSNorm, optionally with the residual add before it, in Triton: one
program per row. With a residual, `residual += x` in place and the norm of the
sum is returned: the pre-norm decoder's `h = h + sublayer(...); norm(h)` in one
pass over the row instead of three."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.triton_utils import check_device, next_pow2


@triton.jit
def _rms_norm_kernel(X, RES, W, OUT, stride_x, stride_r, stride_o, n_cols, eps,
                     HAS_RESIDUAL: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(X + row * stride_x + offs, mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        x = (x + tl.load(RES + row * stride_r + offs, mask=mask, other=0.0).to(tl.float32))
        x = x.to(RES.dtype.element_ty)
        tl.store(RES + row * stride_r + offs, x, mask=mask)
        x = x.to(tl.float32)
    variance = tl.sum(x * x, 0) / n_cols
    # As the reference: normalise in fp32, cast to the input dtype, then scale by the weight.
    y = (x * tl.rsqrt(variance + eps)).to(OUT.dtype.element_ty)
    w = tl.load(W + offs, mask=mask, other=0.0)
    tl.store(OUT + row * stride_o + offs, (w * y).to(OUT.dtype.element_ty), mask=mask)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float,
             residual: torch.Tensor | None = None) -> torch.Tensor:
    """x [rows, hidden], weight [hidden]; residual [rows, hidden] (updated in place to x + residual)."""
    if x.dim() != 2 or weight.shape != (x.shape[1],):
        raise ValueError(f"x {tuple(x.shape)} must be [rows, hidden] and weight [hidden], got {tuple(weight.shape)}")
    if residual is not None and (residual.shape != x.shape or residual.dtype != x.dtype):
        raise ValueError(f"residual {tuple(residual.shape)} {residual.dtype} must match x {tuple(x.shape)} {x.dtype}")
    if x.stride(-1) != 1 or weight.stride(-1) != 1 or (residual is not None and residual.stride(-1) != 1):
        raise ValueError("x, weight and residual must be contiguous in their last dim")
    check_device(x, weight)
    out = torch.empty_like(x)
    rows, hidden = x.shape
    if rows == 0:
        return out
    res = x if residual is None else residual
    _rms_norm_kernel[(rows,)](x, res, weight, out, x.stride(0), res.stride(0), out.stride(0), hidden, eps,
                              HAS_RESIDUAL=residual is not None, BLOCK=next_pow2(hidden))
    return out


def rms_norm_reference(x: torch.Tensor, weight: torch.Tensor, eps: float,
                       residual: torch.Tensor | None = None) -> torch.Tensor:
    if residual is not None:
        residual.add_(x)
        x = residual
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return weight * y.to(x.dtype)
