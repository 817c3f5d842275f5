"""Decode attention in Triton: one new token per request over the token-granular
paged KV pool, split-K ("flash-decoding").

A request's keys live in arbitrary pool slots, listed in `kv_indices` from
`kv_indptr[b]` to `kv_indptr[b + 1]` (the flat CSR layout of every request's
slot list). One program handles (request, KV head, split): it loads the query
heads of that KV head's group as the rows of one tile, so grouped-query
attention reads each K/V row once and never expands K/V; the split walks its
share of the keys with an online softmax and leaves a partial output and its
log-sum-exp. A second kernel combines the splits. Long contexts with a small
batch get several programs per request instead of one.

The torch reference is `kernels.paged_attention.decode_attention`.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.triton_utils import check_device, dot_precision, next_pow2


@triton.jit
def _decode_split_kernel(
    Q, K, V, KV_INDPTR, KV_INDICES, MID_O, MID_LSE, scale,
    stride_qb, stride_qh, stride_kh, stride_ks, stride_mb, stride_mh, stride_ms,
    NUM_SPLITS: tl.constexpr, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr,
    BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, PRECISION: tl.constexpr,
):
    b = tl.program_id(0)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    kv_start = tl.load(KV_INDPTR + b)
    kv_len = tl.load(KV_INDPTR + b + 1) - kv_start
    split_len = tl.cdiv(kv_len, NUM_SPLITS)
    lo = split * split_len
    hi = tl.minimum(lo + split_len, kv_len)

    offs_h = tl.arange(0, BLOCK_H)
    offs_d = tl.arange(0, BLOCK_D)
    offs_n = tl.arange(0, BLOCK_N)
    h_mask = offs_h < GROUP
    d_mask = offs_d < HEAD_DIM
    heads = kv_head * GROUP + offs_h
    q = tl.load(Q + b * stride_qb + heads[:, None] * stride_qh + offs_d[None, :],
                mask=h_mask[:, None] & d_mask[None, :], other=0.0)  # [BLOCK_H, BLOCK_D]

    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, BLOCK_D], tl.float32)
    for start in range(lo, hi, BLOCK_N):
        n = start + offs_n
        n_mask = n < hi
        slots = tl.load(KV_INDICES + kv_start + n, mask=n_mask, other=0).to(tl.int64)
        kv_offs = kv_head * stride_kh + slots[:, None] * stride_ks + offs_d[None, :]
        kv_mask = n_mask[:, None] & d_mask[None, :]
        k = tl.load(K + kv_offs, mask=kv_mask, other=0.0)  # [BLOCK_N, BLOCK_D]
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale  # [BLOCK_H, BLOCK_N]
        s = tl.where(n_mask[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))  # finite: every block holds a key
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + kv_offs, mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m_i = m_new

    # An empty split (its share starts past the end) leaves lse = -inf and a zero output.
    empty = l_i == 0.0
    out = acc / tl.where(empty, 1.0, l_i)[:, None]
    lse = tl.where(empty, float("-inf"), m_i + tl.log(tl.where(empty, 1.0, l_i)))
    mid = b * stride_mb + heads * stride_mh + split * stride_ms
    tl.store(MID_O + mid[:, None] + offs_d[None, :], out, mask=h_mask[:, None] & d_mask[None, :])
    tl.store(MID_LSE + b * (stride_mb // stride_ms) + heads * NUM_SPLITS + split, lse, mask=h_mask)


@triton.jit
def _decode_combine_kernel(
    MID_O, MID_LSE, O, stride_mb, stride_mh, stride_ms, stride_ob, stride_oh,
    NUM_SPLITS: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
):
    b = tl.program_id(0)
    head = tl.program_id(1)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    s_mask = offs_s < NUM_SPLITS
    d_mask = offs_d < HEAD_DIM
    lse = tl.load(MID_LSE + b * (stride_mb // stride_ms) + head * NUM_SPLITS + offs_s, mask=s_mask,
                  other=float("-inf"))
    m = tl.max(lse, 0)
    m = tl.where(m == float("-inf"), 0.0, m)  # no keys at all: every weight is zero
    w = tl.where(lse == float("-inf"), 0.0, tl.exp(lse - m))  # [BLOCK_S]
    part = tl.load(MID_O + b * stride_mb + head * stride_mh + offs_s[:, None] * stride_ms + offs_d[None, :],
                   mask=s_mask[:, None] & d_mask[None, :], other=0.0)  # [BLOCK_S, BLOCK_D]
    denom = tl.sum(w, 0)
    out = tl.sum(part * w[:, None], 0) / tl.where(denom == 0.0, 1.0, denom)
    tl.store(O + b * stride_ob + head * stride_oh + offs_d, out.to(O.dtype.element_ty), mask=d_mask)


def choose_num_splits(batch_size: int, max_kv_len: int, num_kv_heads: int) -> int:
    """Enough programs to fill a GPU (~128 SMs) when the batch is small, never more than
    one split per 64 keys; a power of two so the set of compiled kernels stays small."""
    want = max(1, 256 // max(1, batch_size * num_kv_heads))
    return max(1, min(next_pow2(want), next_pow2(max(1, max_kv_len // 64)), 32))


def decode_attention(
    q: torch.Tensor,           # [num_decode, num_heads, head_dim]
    k_cache: torch.Tensor,     # [num_kv_heads, num_slots, head_dim] (one layer)
    v_cache: torch.Tensor,
    kv_indptr: torch.Tensor,   # [num_decode + 1] int32: request b's keys are kv_indices[indptr[b]:indptr[b+1]]
    kv_indices: torch.Tensor,  # [total_kv] int32/int64 slot ids
    scale: float,
    num_splits: int = 1,
) -> torch.Tensor:             # [num_decode, num_heads, head_dim]; a request with no keys gets zeros
    num_decode, num_heads, head_dim = q.shape
    num_kv_heads, _, cache_dim = k_cache.shape
    if cache_dim != head_dim or v_cache.shape != k_cache.shape or v_cache.stride() != k_cache.stride():
        raise ValueError(f"K/V cache {tuple(k_cache.shape)}/{tuple(v_cache.shape)} do not match q {tuple(q.shape)}")
    if num_heads % num_kv_heads:
        raise ValueError(f"{num_heads} query heads are not a multiple of {num_kv_heads} KV heads")
    if kv_indptr.shape != (num_decode + 1,) or kv_indices.dim() != 1:
        raise ValueError(f"kv_indptr {tuple(kv_indptr.shape)} must be [{num_decode + 1}], kv_indices 1-D")
    if q.stride(-1) != 1 or k_cache.stride(-1) != 1:
        raise ValueError("q and the K/V cache must be contiguous in head_dim")
    if not (q.device == k_cache.device == kv_indptr.device == kv_indices.device):
        raise ValueError("q, the K/V cache and the slot lists must be on one device")
    if num_splits < 1:
        raise ValueError(f"num_splits must be positive, got {num_splits}")
    check_device(q, k_cache)
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)  # q may be a strided view
    if num_decode == 0:
        return out
    group = num_heads // num_kv_heads
    mid_o = torch.empty(num_decode, num_heads, num_splits, head_dim, dtype=torch.float32, device=q.device)
    mid_lse = torch.empty(num_decode, num_heads, num_splits, dtype=torch.float32, device=q.device)
    block_d = max(16, next_pow2(head_dim))  # tl.dot needs 16 on every side
    _decode_split_kernel[(num_decode, num_kv_heads, num_splits)](
        q, k_cache, v_cache, kv_indptr, kv_indices, mid_o, mid_lse, scale,
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1),
        mid_o.stride(0), mid_o.stride(1), mid_o.stride(2),
        NUM_SPLITS=num_splits, GROUP=group, HEAD_DIM=head_dim,
        BLOCK_H=max(16, next_pow2(group)), BLOCK_N=32 if block_d > 64 else 64, BLOCK_D=block_d,
        PRECISION=dot_precision(q.dtype),
    )
    _decode_combine_kernel[(num_decode, num_heads)](
        mid_o, mid_lse, out, mid_o.stride(0), mid_o.stride(1), mid_o.stride(2), out.stride(0), out.stride(1),
        NUM_SPLITS=num_splits, HEAD_DIM=head_dim, BLOCK_S=max(2, next_pow2(num_splits)), BLOCK_D=block_d,
    )
    return out
