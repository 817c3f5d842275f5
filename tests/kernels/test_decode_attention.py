"""Split-K decode attention against the torch path (kernels.paged_attention)."""
from __future__ import annotations

import pytest
import torch

from kernels import paged_attention
from kernels.decode_attention import choose_num_splits, decode_attention
from tests.kernels.slot_lists import csr, scattered_slots


def reference(q, k_cache, v_cache, slots, scale):
    lens = [s.numel() for s in slots]
    table = torch.zeros(len(slots), max(lens), dtype=torch.int64)
    for j, s in enumerate(slots):
        table[j, : s.numel()] = s
    mask = (torch.arange(max(lens))[None, :] < torch.tensor(lens)[:, None])[:, None, None, :]
    return paged_attention.decode_attention(q.cpu().float(), k_cache.cpu().float(), v_cache.cpu().float(),
                                            table, mask, scale)


def run(device, num_heads, num_kv_heads, head_dim, kv_lens, num_splits, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    num_slots = sum(kv_lens) + 40
    k_cache = torch.randn(num_kv_heads, num_slots, head_dim, generator=g).to(device, dtype)
    v_cache = torch.randn(num_kv_heads, num_slots, head_dim, generator=g).to(device, dtype)
    q = torch.randn(len(kv_lens), num_heads, head_dim, generator=g).to(device, dtype)
    slots = scattered_slots(kv_lens, num_slots, g)
    scale = head_dim ** -0.5
    out = decode_attention(q, k_cache, v_cache, csr(kv_lens, device), torch.cat(slots).to(device), scale, num_splits)
    return out, reference(q, k_cache, v_cache, slots, scale)


@pytest.mark.parametrize("num_heads,num_kv_heads", [(4, 4), (4, 1), (8, 2)])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_matches_reference_over_gqa_ratios_and_head_sizes(device, num_heads, num_kv_heads, head_dim):
    # ragged lengths: one key, a few, more than one key block
    out, ref = run(device, num_heads, num_kv_heads, head_dim, [1, 5, 70], num_splits=1)
    torch.testing.assert_close(out.cpu(), ref, atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("num_splits", [2, 3, 8])
def test_split_k_combines_to_the_same_result(device, num_splits):
    # 8 splits of 3 keys leave empty splits in the one-key and two-key requests
    out, ref = run(device, 4, 2, 64, [2, 1, 19, 40], num_splits=num_splits, seed=1)
    torch.testing.assert_close(out.cpu(), ref, atol=2e-5, rtol=1e-4)


def test_half_precision(device):
    out, ref = run(device, 4, 2, 64, [3, 33], num_splits=2, dtype=torch.float16, seed=2)
    assert out.dtype == torch.float16
    torch.testing.assert_close(out.cpu().float(), ref, atol=3e-3, rtol=3e-3)


def test_request_with_no_keys_gets_zeros_and_leaves_others_alone(device):
    g = torch.Generator().manual_seed(3)
    k_cache = torch.randn(2, 16, 64, generator=g).to(device)
    v_cache = torch.randn(2, 16, 64, generator=g).to(device)
    q = torch.randn(2, 4, 64, generator=g).to(device)
    slots = torch.tensor([3, 9, 4], device=device)
    out = decode_attention(q, k_cache, v_cache, csr([0, 3], device), slots, 0.125, num_splits=2)
    assert torch.equal(out[0].cpu(), torch.zeros(4, 64))
    torch.testing.assert_close(out[1:].cpu(), reference(q[1:], k_cache, v_cache, [slots.cpu()], 0.125),
                               atol=2e-5, rtol=1e-4)


def test_empty_batch(device):
    out = decode_attention(torch.empty(0, 4, 64, device=device), torch.zeros(2, 8, 64, device=device),
                           torch.zeros(2, 8, 64, device=device), csr([], device),
                           torch.empty(0, dtype=torch.int32, device=device), 0.125)
    assert out.shape == (0, 4, 64)


def test_wrapper_rejects_bad_shapes(device):
    q = torch.zeros(2, 6, 64, device=device)
    cache = torch.zeros(4, 8, 64, device=device)
    with pytest.raises(ValueError, match="not a multiple"):
        decode_attention(q, cache, cache, csr([1, 1], device), torch.ones(2, dtype=torch.int32, device=device), 1.0)
    with pytest.raises(ValueError, match="kv_indptr"):
        decode_attention(q[:, :4], cache, cache, csr([1], device), torch.ones(1, dtype=torch.int32, device=device),
                         1.0)
    with pytest.raises(ValueError, match="do not match"):
        decode_attention(q[:, :4, :32], cache, cache, csr([1, 1], device),
                         torch.ones(2, dtype=torch.int32, device=device), 1.0)


def test_num_splits_grows_with_context_and_shrinks_with_batch():
    assert choose_num_splits(1, 32, 2) == 1
    assert choose_num_splits(1, 4096, 2) > choose_num_splits(64, 4096, 2)
    assert all(n & (n - 1) == 0 for n in (choose_num_splits(b, L, 8) for b in (1, 3, 100) for L in (1, 900, 10**5)))
