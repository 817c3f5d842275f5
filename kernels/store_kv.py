"""Storing the new tokens' K and V into their pool slots, in Triton: one program
per token writes every KV head's row of K and of V (the slots may be anywhere
in the pool, in any order)."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.triton_utils import check_device, next_pow2


@triton.jit
def _store_kv_kernel(
    K, V, K_CACHE, V_CACHE, SLOTS,
    stride_kt, stride_kh, stride_vt, stride_vh, stride_ch, stride_cs,
    NUM_HEADS: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr,
):
    t = tl.program_id(0)
    slot = tl.load(SLOTS + t).to(tl.int64)
    offs_h = tl.arange(0, BLOCK_H)
    offs_d = tl.arange(0, BLOCK_D)
    mask = (offs_h < NUM_HEADS)[:, None] & (offs_d < HEAD_DIM)[None, :]
    dst = offs_h[:, None] * stride_ch + slot * stride_cs + offs_d[None, :]
    k = tl.load(K + t * stride_kt + offs_h[:, None] * stride_kh + offs_d[None, :], mask=mask)
    tl.store(K_CACHE + dst, k.to(K_CACHE.dtype.element_ty), mask=mask)
    v = tl.load(V + t * stride_vt + offs_h[:, None] * stride_vh + offs_d[None, :], mask=mask)
    tl.store(V_CACHE + dst, v.to(V_CACHE.dtype.element_ty), mask=mask)


def store_kv(
    k: torch.Tensor,           # [num_tokens, num_kv_heads, head_dim]
    v: torch.Tensor,
    k_cache: torch.Tensor,     # [num_kv_heads, num_slots, head_dim] (one layer), written in place
    v_cache: torch.Tensor,
    slots: torch.Tensor,       # [num_tokens] int slot of each token
) -> None:
    num_tokens, num_heads, head_dim = k.shape
    if v.shape != k.shape or k_cache.shape[0] != num_heads or k_cache.shape[2] != head_dim:
        raise ValueError(f"k {tuple(k.shape)}, v {tuple(v.shape)} do not fit the cache {tuple(k_cache.shape)}")
    if v_cache.shape != k_cache.shape or v_cache.stride() != k_cache.stride() or k_cache.stride(-1) != 1:
        raise ValueError("the K and V caches must have one shape and layout, contiguous in head_dim")
    if slots.shape != (num_tokens,):
        raise ValueError(f"slots {tuple(slots.shape)} must be [{num_tokens}]")
    if k.stride(-1) != 1 or v.stride(-1) != 1:
        raise ValueError("k and v must be contiguous in head_dim")
    if not (k.device == v.device == k_cache.device == slots.device):
        raise ValueError("k, v, the caches and the slots must be on one device")
    check_device(k, k_cache)
    if num_tokens == 0:
        return
    _store_kv_kernel[(num_tokens,)](
        k, v, k_cache, v_cache, slots, k.stride(0), k.stride(1), v.stride(0), v.stride(1),
        k_cache.stride(0), k_cache.stride(1),
        NUM_HEADS=num_heads, HEAD_DIM=head_dim, BLOCK_H=next_pow2(num_heads), BLOCK_D=next_pow2(head_dim),
    )


def store_kv_reference(k, v, k_cache, v_cache, slots) -> None:
    """The torch path (what `KVPool.write` does)."""
    k_cache.index_copy_(1, slots.long(), k.transpose(0, 1).to(k_cache.dtype))
    v_cache.index_copy_(1, slots.long(), v.transpose(0, 1).to(v_cache.dtype))
