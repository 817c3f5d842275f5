"""Extend attention (new tokens over a cached prefix) against the torch path."""
from __future__ import annotations

import pytest
import torch

from kernels import paged_attention
from kernels.extend_attention import extend_attention
from tests.kernels.slot_lists import csr, scattered_slots

# (new tokens, cached prefix) per request: a whole prompt, a one-token prompt, a chunk after
# cached chunks, a decode row, a verification step (1 + 4 drafted tokens), a request with no
# new tokens in this step, and a prompt longer than one query block.
CASES = [(7, 0), (1, 0), (5, 11), (1, 30), (5, 40), (0, 3), (37, 2)]


def run(device, num_heads, num_kv_heads, head_dim, cases, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    extend_lens = [e for e, _ in cases]
    kv_lens = [e + p for e, p in cases]
    num_slots = sum(kv_lens) + 50
    k_cache = torch.randn(num_kv_heads, num_slots, head_dim, generator=g).to(device, dtype)
    v_cache = torch.randn(num_kv_heads, num_slots, head_dim, generator=g).to(device, dtype)
    q = torch.randn(sum(extend_lens), num_heads, head_dim, generator=g).to(device, dtype)
    slots = scattered_slots(kv_lens, num_slots, g)
    scale = head_dim ** -0.5
    out = extend_attention(q, k_cache, v_cache, csr(extend_lens, device), csr(kv_lens, device),
                           torch.cat(slots).to(device), scale, max(extend_lens)).cpu().float()
    start = 0
    for e, s in zip(extend_lens, slots):
        if e:
            ref = paged_attention.extend_attention(q[start : start + e].cpu().float(), k_cache.cpu().float(),
                                                   v_cache.cpu().float(), s, scale)
            tol = 2e-5 if dtype == torch.float32 else 3e-3
            torch.testing.assert_close(out[start : start + e], ref, atol=tol, rtol=tol * 5)
        start += e


@pytest.mark.parametrize("num_heads,num_kv_heads", [(4, 4), (4, 1), (8, 2)])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_matches_reference_over_gqa_ratios_and_head_sizes(device, num_heads, num_kv_heads, head_dim):
    run(device, num_heads, num_kv_heads, head_dim, CASES)


def test_odd_head_size(device):
    run(device, 2, 1, 80, [(3, 4), (9, 0)], seed=1)  # head_dim not a power of two: masked lanes


def test_half_precision(device):
    run(device, 4, 2, 64, [(6, 9), (1, 5)], dtype=torch.float16, seed=2)


def test_no_new_tokens_at_all(device):
    cache = torch.zeros(2, 8, 64, device=device)
    out = extend_attention(torch.empty(0, 4, 64, device=device), cache, cache, csr([0], device), csr([3], device),
                           torch.tensor([1, 2, 3], dtype=torch.int32, device=device), 1.0, 0)
    assert out.shape == (0, 4, 64)


def test_wrapper_rejects_bad_shapes(device):
    q = torch.zeros(3, 4, 64, device=device)
    cache = torch.zeros(2, 8, 64, device=device)
    slots = torch.ones(3, dtype=torch.int32, device=device)
    with pytest.raises(ValueError, match="must be"):
        extend_attention(q, cache, cache, csr([3], device), csr([1, 2], device), slots, 1.0, 3)
    with pytest.raises(ValueError, match="do not match"):
        extend_attention(q, cache, cache[:, :4], csr([3], device), csr([3], device), slots, 1.0, 3)
