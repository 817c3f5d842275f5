"""Fused RMSNorm(+residual) and SiLU gate against their torch references (and the
engine's own rms_norm, which matches Hugging Face)."""
from __future__ import annotations

import pytest
import torch

from engine.models.llama import rms_norm as engine_rms_norm
from kernels.rms_norm import rms_norm, rms_norm_reference
from kernels.silu_gate import silu_gate, silu_gate_reference


@pytest.mark.parametrize("rows,hidden", [(1, 64), (5, 576), (3, 100), (0, 64)])
def test_rms_norm(device, rows, hidden):
    g = torch.Generator().manual_seed(rows + hidden)
    x, w = torch.randn(rows, hidden, generator=g), torch.randn(hidden, generator=g)
    out = rms_norm(x.to(device), w.to(device), 1e-6)
    torch.testing.assert_close(out.cpu(), rms_norm_reference(x, w, 1e-6), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.cpu(), engine_rms_norm(x, w, 1e-6), atol=1e-5, rtol=1e-5)


def test_rms_norm_with_residual_updates_it_in_place(device):
    g = torch.Generator().manual_seed(1)
    x, res, w = torch.randn(4, 96, generator=g), torch.randn(4, 96, generator=g), torch.randn(96, generator=g)
    ref_res = res.clone()
    ref = rms_norm_reference(x, w, 1e-5, residual=ref_res)
    dres = res.clone().to(device)
    out = rms_norm(x.to(device), w.to(device), 1e-5, residual=dres)
    torch.testing.assert_close(dres.cpu(), x + res)
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)


def test_rms_norm_half_precision(device):
    g = torch.Generator().manual_seed(2)
    x, w = torch.randn(3, 128, generator=g).half(), torch.randn(128, generator=g).half()
    out = rms_norm(x.to(device), w.to(device), 1e-6)
    assert out.dtype == torch.float16
    torch.testing.assert_close(out.cpu().float(), rms_norm_reference(x, w, 1e-6).float(), atol=2e-3, rtol=2e-3)


def test_rms_norm_rejects_bad_shapes(device):
    with pytest.raises(ValueError, match="weight"):
        rms_norm(torch.zeros(2, 8, device=device), torch.zeros(4, device=device), 1e-6)
    with pytest.raises(ValueError, match="residual"):
        rms_norm(torch.zeros(2, 8, device=device), torch.zeros(8, device=device), 1e-6,
                 residual=torch.zeros(3, 8, device=device))


@pytest.mark.parametrize("rows,inter", [(1, 128), (3, 1536), (2, 100), (0, 64)])
def test_silu_gate(device, rows, inter):
    g = torch.Generator().manual_seed(rows * inter)
    x = torch.randn(rows, 2 * inter, generator=g)
    out = silu_gate(x.to(device))
    torch.testing.assert_close(out.cpu(), silu_gate_reference(x), atol=1e-5, rtol=1e-5)


def test_silu_gate_rejects_odd_width(device):
    with pytest.raises(ValueError, match="2 \\* inter"):
        silu_gate(torch.zeros(2, 7, device=device))


def test_layer_ops_pair_agrees(device):
    from kernels.layer_ops import TorchLayerOps, TritonLayerOps, make_layer_ops

    assert isinstance(make_layer_ops("torch"), TorchLayerOps) and isinstance(make_layer_ops("triton"), TritonLayerOps)
    g = torch.Generator().manual_seed(7)
    x, res, w = torch.randn(3, 64, generator=g), torch.randn(3, 64, generator=g), torch.randn(64, generator=g)
    torch_ops, triton_ops = TorchLayerOps(), TritonLayerOps()
    assert torch.equal(torch_ops.rms_norm(x, w, 1e-6), engine_rms_norm(x, w, 1e-6))  # the CPU path, bit for bit
    normed, summed = torch_ops.add_rms_norm(x, res, w, 1e-6)
    dres = res.clone().to(device)
    fused, fused_sum = triton_ops.add_rms_norm(x.to(device), dres, w.to(device), 1e-6)
    assert fused_sum is dres  # the fused op writes the sum into the residual it was given
    torch.testing.assert_close(fused_sum.cpu(), summed)
    torch.testing.assert_close(fused.cpu(), normed, atol=1e-5, rtol=1e-5)
    gu = torch.randn(2, 128, generator=g)
    torch.testing.assert_close(triton_ops.silu_gate(gu.to(device)).cpu(), torch_ops.silu_gate(gu), atol=1e-6,
                               rtol=1e-5)
