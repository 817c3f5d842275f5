"""Storing K/V into pool slots against KVPool's own write (index_copy_)."""
from __future__ import annotations

import pytest
import torch

from kernels.store_kv import store_kv, store_kv_reference


@pytest.mark.parametrize("num_kv_heads,head_dim", [(1, 64), (2, 128), (3, 80)])
@pytest.mark.parametrize("slot_dtype", [torch.int64, torch.int32])
def test_matches_pool_write(device, num_kv_heads, head_dim, slot_dtype):
    g = torch.Generator().manual_seed(0)
    shape = (num_kv_heads, 40, head_dim)
    k_cache, v_cache = torch.randn(shape, generator=g), torch.randn(shape, generator=g)
    k = torch.randn(6, num_kv_heads, head_dim, generator=g)
    v = torch.randn(6, num_kv_heads, head_dim, generator=g)
    slots = torch.tensor([39, 2, 17, 5, 30, 11])  # out of order, with holes
    ref_k, ref_v = k_cache.clone(), v_cache.clone()
    store_kv_reference(k, v, ref_k, ref_v, slots)
    dk, dv = k_cache.to(device), v_cache.to(device)
    store_kv(k.to(device), v.to(device), dk, dv, slots.to(device, slot_dtype))
    assert torch.equal(dk.cpu(), ref_k) and torch.equal(dv.cpu(), ref_v)


def test_writes_one_layer_of_a_pool_and_casts(device):
    cache = torch.zeros(3, 2, 10, 64, dtype=torch.float16, device=device)  # [layers, heads, slots, dim]
    k = torch.randn(2, 2, 64, device=device)
    store_kv(k, -k, cache[1], cache[2], torch.tensor([4, 7], device=device))
    assert torch.equal(cache[1][:, 4].cpu(), k[0].half().cpu())
    assert torch.equal(cache[2][:, 7].cpu(), -k[1].half().cpu())
    assert int((cache[0] != 0).sum()) == 0 and int((cache[1] != 0).sum()) == 2 * 2 * 64


def test_no_tokens_and_bad_shapes(device):
    cache = torch.zeros(2, 8, 64, device=device)
    store_kv(torch.empty(0, 2, 64, device=device), torch.empty(0, 2, 64, device=device), cache, cache,
             torch.empty(0, dtype=torch.int64, device=device))
    with pytest.raises(ValueError, match="do not fit"):
        store_kv(torch.zeros(1, 3, 64, device=device), torch.zeros(1, 3, 64, device=device), cache, cache,
                 torch.zeros(1, dtype=torch.int64, device=device))
    with pytest.raises(ValueError, match="slots"):
        store_kv(torch.zeros(2, 2, 64, device=device), torch.zeros(2, 2, 64, device=device), cache, cache,
                 torch.zeros(1, dtype=torch.int64, device=device))
