"""Attention over a token-granular paged KV pool: the torch path (CPU, and the
reference any Triton kernel is checked against).

The pool is head-major, one layer is [kv_heads, num_slots, head_dim], so a
gather of a padded slot table comes out as [kv_heads, rows, len, dim] and the
batched matmuls below read it in place (batch dims (kv_heads, rows) collapse
into one stride)."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def gather_kv(cache: torch.Tensor, slot_table: torch.Tensor) -> torch.Tensor:
    """cache [kv_heads, num_slots, dim], slot_table [rows, len] -> [kv_heads, rows, len, dim]."""
    rows, length = slot_table.shape
    # index_select on the flat table: advanced indexing with a 2-D index is far slower on CPU.
    return cache.index_select(1, slot_table.reshape(-1)).view(cache.shape[0], rows, length, cache.shape[2])


def decode_attention(
    q: torch.Tensor,            # [num_decode, num_heads, head_dim]
    k_cache: torch.Tensor,      # [num_kv_heads, num_slots, head_dim] (one layer)
    v_cache: torch.Tensor,
    slot_table: torch.Tensor,   # [num_decode, max_kv_len] int64, padded with slot 0
    mask: torch.Tensor,         # [num_decode, 1, 1, max_kv_len] bool, True = attend
    scale: float,
) -> torch.Tensor:              # [num_decode, num_heads, head_dim]
    num_decode, num_heads, head_dim = q.shape
    num_kv_heads = k_cache.shape[0]
    group = num_heads // num_kv_heads
    k = gather_kv(k_cache, slot_table)  # [kv_heads, num_decode, max_kv_len, dim]
    v = gather_kv(v_cache, slot_table)
    # Grouped-query attention without expanding K/V: the query heads of one KV head are the rows.
    qg = q.view(num_decode, num_kv_heads, group, head_dim).transpose(0, 1)  # [kv_heads, num_decode, group, dim]
    scores = torch.matmul(qg, k.transpose(-1, -2)) * scale                 # [kv_heads, num_decode, group, len]
    scores = scores.masked_fill(~mask.view(1, num_decode, 1, -1), float("-inf"))
    out = torch.matmul(scores.softmax(dim=-1), v)                           # [kv_heads, num_decode, group, dim]
    return out.transpose(0, 1).reshape(num_decode, num_heads, head_dim)


def extend_attention(
    q: torch.Tensor,            # [extend_len, num_heads, head_dim]: the new tokens of one request
    k_cache: torch.Tensor,      # [num_kv_heads, num_slots, head_dim] (one layer)
    v_cache: torch.Tensor,
    kv_slots: torch.Tensor,     # [kv_len] slots of all the request's tokens, new ones last
    scale: float,
) -> torch.Tensor:              # [extend_len, num_heads, head_dim]
    extend_len, kv_len = q.shape[0], kv_slots.numel()
    k = k_cache.index_select(1, kv_slots).unsqueeze(0)  # [1, kv_heads, kv_len, dim]
    v = v_cache.index_select(1, kv_slots).unsqueeze(0)
    qh = q.transpose(0, 1).unsqueeze(0)                 # [1, heads, extend_len, dim]
    gqa = q.shape[1] != k.shape[1]
    if extend_len == kv_len:
        out = F.scaled_dot_product_attention(qh, k, v, is_causal=True, scale=scale, enable_gqa=gqa)
    else:
        # New token i sits at position kv_len - extend_len + i and sees keys up to it.
        qpos = torch.arange(kv_len - extend_len, kv_len)
        mask = torch.arange(kv_len)[None, :] <= qpos[:, None]
        out = F.scaled_dot_product_attention(qh, k, v, attn_mask=mask, scale=scale, enable_gqa=gqa)
    return out.squeeze(0).transpose(0, 1)
