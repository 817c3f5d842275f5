"""Extend attention in Triton: several new tokens per request over the paged KV
pool, with part of the request already cached.

Request b's new queries are rows `qo_indptr[b]:qo_indptr[b + 1]` of q; its
keys are all of its tokens, cached prefix first and the new ones last, at the
slots `kv_indices[kv_indptr[b]:kv_indptr[b + 1]]` (the new K/V are stored
before this runs). New token i sits at position prefix_len + i and attends
every prefix key and the new keys up to itself. That one rule covers a whole
prompt (prefix 0), a chunk of a prompt whose earlier chunks are cached, a
prompt whose start hit the radix cache, and a decode step verifying drafted
tokens (1 + k new tokens); a plain decode row (one new token) is a block of one.

One program handles (request, query head, block of new tokens); the KV head is
query head // group, so K/V are never expanded. A request with no new tokens
writes nothing. The torch reference is `kernels.paged_attention.extend_attention`.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.triton_utils import check_device, dot_precision, next_pow2


@triton.jit
def _extend_kernel(
    Q, K, V, O, QO_INDPTR, KV_INDPTR, KV_INDICES, scale,
    stride_qt, stride_qh, stride_kh, stride_ks, stride_ot, stride_oh,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, PRECISION: tl.constexpr,
):
    b = tl.program_id(0)
    head = tl.program_id(1)
    block = tl.program_id(2)
    q_start = tl.load(QO_INDPTR + b)
    extend_len = tl.load(QO_INDPTR + b + 1) - q_start
    kv_start = tl.load(KV_INDPTR + b)
    kv_len = tl.load(KV_INDPTR + b + 1) - kv_start
    prefix_len = kv_len - extend_len
    kv_head = head // GROUP

    offs_m = block * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    offs_n = tl.arange(0, BLOCK_N)
    m_mask = offs_m < extend_len
    d_mask = offs_d < HEAD_DIM
    q = tl.load(Q + (q_start + offs_m)[:, None] * stride_qt + head * stride_qh + offs_d[None, :],
                mask=m_mask[:, None] & d_mask[None, :], other=0.0)  # [BLOCK_M, BLOCK_D]
    q_pos = prefix_len + offs_m  # position of each new token in its request

    # Keys past the last query of this block are never attended; a block past the end reads none.
    hi = tl.minimum(kv_len, prefix_len + (block + 1) * BLOCK_M)
    hi = tl.where(block * BLOCK_M < extend_len, hi, 0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for start in range(0, hi, BLOCK_N):
        n = start + offs_n
        n_mask = n < hi
        slots = tl.load(KV_INDICES + kv_start + n, mask=n_mask, other=0).to(tl.int64)
        kv_offs = kv_head * stride_kh + slots[:, None] * stride_ks + offs_d[None, :]
        kv_mask = n_mask[:, None] & d_mask[None, :]
        k = tl.load(K + kv_offs, mask=kv_mask, other=0.0)  # [BLOCK_N, BLOCK_D]
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale  # [BLOCK_M, BLOCK_N]
        visible = m_mask[:, None] & n_mask[None, :] & (n[None, :] <= q_pos[:, None])
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        # Rows that see nothing yet (padding rows) keep m = -inf: shift by 0 so no NaN appears.
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp(m_i - m_safe)
        p = tl.exp(s - m_safe[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + kv_offs, mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m_i = m_new

    out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
    tl.store(O + (q_start + offs_m)[:, None] * stride_ot + head * stride_oh + offs_d[None, :],
             out.to(O.dtype.element_ty), mask=m_mask[:, None] & d_mask[None, :])


def extend_attention(
    q: torch.Tensor,           # [num_tokens, num_heads, head_dim]: every request's new tokens, in order
    k_cache: torch.Tensor,     # [num_kv_heads, num_slots, head_dim] (one layer), new K/V already stored
    v_cache: torch.Tensor,
    qo_indptr: torch.Tensor,   # [num_requests + 1] int32: request b's new tokens are q[qo_indptr[b]:qo_indptr[b+1]]
    kv_indptr: torch.Tensor,   # [num_requests + 1] int32
    kv_indices: torch.Tensor,  # [total_kv] slot ids: each request's tokens, new ones last
    scale: float,
    max_extend_len: int,       # the largest qo_indptr step (known on the host; sizes the grid)
) -> torch.Tensor:             # [num_tokens, num_heads, head_dim]
    num_tokens, num_heads, head_dim = q.shape
    num_kv_heads, _, cache_dim = k_cache.shape
    num_requests = qo_indptr.numel() - 1
    if cache_dim != head_dim or v_cache.shape != k_cache.shape or v_cache.stride() != k_cache.stride():
        raise ValueError(f"K/V cache {tuple(k_cache.shape)}/{tuple(v_cache.shape)} do not match q {tuple(q.shape)}")
    if num_heads % num_kv_heads:
        raise ValueError(f"{num_heads} query heads are not a multiple of {num_kv_heads} KV heads")
    if qo_indptr.dim() != 1 or kv_indptr.shape != qo_indptr.shape or kv_indices.dim() != 1:
        raise ValueError(f"qo_indptr {tuple(qo_indptr.shape)} and kv_indptr {tuple(kv_indptr.shape)} must be "
                         "[num_requests + 1], kv_indices 1-D")
    if q.stride(-1) != 1 or k_cache.stride(-1) != 1:
        raise ValueError("q and the K/V cache must be contiguous in head_dim")
    if not (q.device == k_cache.device == qo_indptr.device == kv_indptr.device == kv_indices.device):
        raise ValueError("q, the K/V cache and the index tensors must be on one device")
    check_device(q, k_cache)
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)  # q may be a strided view
    if num_tokens == 0 or num_requests == 0 or max_extend_len == 0:
        return out
    block_d = max(16, next_pow2(head_dim))  # tl.dot needs 16 on every side
    # Big query blocks for prompts (each K/V block is read once per 64 queries); small ones when
    # every request brings a few tokens (decode rows, drafts), so padding rows cost little.
    block_m = 64 if max_extend_len > 32 else 16
    grid = (num_requests, num_heads, triton.cdiv(max_extend_len, block_m))
    _extend_kernel[grid](
        q, k_cache, v_cache, out, qo_indptr, kv_indptr, kv_indices, scale,
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), out.stride(0), out.stride(1),
        GROUP=num_heads // num_kv_heads, HEAD_DIM=head_dim,
        BLOCK_M=block_m, BLOCK_N=32 if block_d > 128 else 64, BLOCK_D=block_d, PRECISION=dot_precision(q.dtype),
    )
    return out
