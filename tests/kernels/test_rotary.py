"""Rotary embedding (plain, and Qwen2-VL/GLM M-RoPE sections) against the
kernel's torch reference and the engine's RotaryEmbedding/MRotaryEmbedding."""
from __future__ import annotations

import pytest
import torch

from engine.models.rope import MRotaryEmbedding, RotaryEmbedding
from kernels.rotary import apply_rotary_, apply_rotary_reference


@pytest.mark.parametrize("num_heads,head_dim", [(4, 64), (2, 128)])
def test_plain_rope_matches_the_engine(device, num_heads, head_dim):
    g = torch.Generator().manual_seed(head_dim)
    rope = RotaryEmbedding(head_dim, 10000.0, {}, 64, torch.float32)
    x = torch.randn(7, num_heads, head_dim, generator=g)
    positions = torch.tensor([0, 1, 2, 40, 41, 5, 63])
    half = head_dim // 2
    cos, sin = rope.cos[:, :half].contiguous(), rope.sin[:, :half].contiguous()
    out = apply_rotary_(x.clone().to(device), positions.to(device), cos.to(device), sin.to(device)).cpu()
    torch.testing.assert_close(out, rope.apply(x, positions), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out, apply_rotary_reference(x, positions, cos, sin), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("interleaved,head_dim,rotary_dim,sections", [
    (False, 64, 64, (8, 12, 12)),    # Qwen2-VL: half split, whole head
    (True, 64, 32, (4, 6, 6)),       # GLM-V: neighbouring pairs, half the head rotates
    (False, 128, 128, (16, 24, 24)),
])
def test_mrope_matches_the_engine(device, interleaved, head_dim, rotary_dim, sections):
    g = torch.Generator().manual_seed(rotary_dim)
    rope = MRotaryEmbedding(head_dim, rotary_dim, 10000.0, sections, 64, torch.float32, interleaved=interleaved)
    x = torch.randn(6, 3, head_dim, generator=g)
    # text tokens (t = h = w) then image tokens whose height and width positions differ
    positions = torch.tensor([[0, 1, 2, 3, 3, 3], [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 5, 7]])
    out = apply_rotary_(x.clone().to(device), positions.to(device), rope.cos.to(device), rope.sin.to(device),
                        sections, interleaved).cpu()
    torch.testing.assert_close(out, rope.apply(x, positions), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out, apply_rotary_reference(x, positions, rope.cos, rope.sin, sections, interleaved),
                               atol=1e-6, rtol=1e-6)


def test_no_tokens_and_bad_shapes(device):
    cos = torch.zeros(8, 16, device=device)
    assert apply_rotary_(torch.empty(0, 2, 32, device=device), torch.empty(0, dtype=torch.int64, device=device),
                         cos, cos).shape == (0, 2, 32)
    with pytest.raises(ValueError, match="larger than head_dim"):
        apply_rotary_(torch.zeros(1, 2, 16, device=device), torch.zeros(1, dtype=torch.int64, device=device), cos, cos)
    with pytest.raises(ValueError, match="sections"):
        apply_rotary_(torch.zeros(1, 2, 32, device=device), torch.zeros(3, 1, dtype=torch.int64, device=device),
                      cos, cos, (4, 4, 4))


def test_engine_rope_with_the_kernel_matches_without(device):
    """The engine's rope objects with fused=True (the Triton path) agree with their torch path,
    on q/k views cut from one fused projection as the model makes them."""
    g = torch.Generator().manual_seed(11)
    plain = RotaryEmbedding(64, 10000.0, {}, 32, torch.float32)
    fused = RotaryEmbedding(64, 10000.0, {}, 32, torch.float32, device=device, fused=True)
    qkv = torch.randn(5, 3 * 2 * 64, generator=g)
    positions = torch.tensor([0, 3, 4, 5, 31])
    q = qkv.clone().to(device)[:, :128].reshape(5, 2, 64)  # a strided view, rotated in place
    out = fused.apply(q, positions.to(device)).cpu()
    torch.testing.assert_close(out, plain.apply(qkv[:, :128].reshape(5, 2, 64), positions), atol=1e-5, rtol=1e-5)
    mplain = MRotaryEmbedding(64, 64, 10000.0, (8, 12, 12), 32, torch.float32, interleaved=False)
    mfused = MRotaryEmbedding(64, 64, 10000.0, (8, 12, 12), 32, torch.float32, interleaved=False, device=device,
                              fused=True)
    x = torch.randn(5, 2, 64, generator=g)
    torch.testing.assert_close(mfused.apply(x.clone().to(device), positions.to(device)).cpu(),
                               mplain.apply(x, positions), atol=1e-5, rtol=1e-5)
