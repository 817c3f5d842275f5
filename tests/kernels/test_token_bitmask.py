"""Applying an xgrammar token bitmask in place, against the torch reference and
xgrammar's own CPU implementation."""
from __future__ import annotations

import pytest
import torch

from kernels.token_bitmask import apply_token_bitmask_, apply_token_bitmask_reference_


def random_bitmask(rows: int, vocab: int, g: torch.Generator) -> torch.Tensor:
    words = (vocab + 31) // 32
    return torch.randint(-2**31, 2**31 - 1, (rows, words), generator=g, dtype=torch.int64).to(torch.int32)


@pytest.mark.parametrize("rows,vocab", [(1, 32), (3, 1000), (2, 1031)])
def test_matches_reference(device, rows, vocab):
    g = torch.Generator().manual_seed(vocab)
    logits, mask = torch.randn(rows, vocab, generator=g), random_bitmask(rows, vocab, g)
    ref = apply_token_bitmask_reference_(logits.clone(), mask)
    out = apply_token_bitmask_(logits.clone().to(device), mask.to(device)).cpu()
    assert torch.equal(out, ref)
    assert torch.isinf(out).any() and torch.isfinite(out).any()


def test_matches_xgrammar(device):
    xgr = pytest.importorskip("xgrammar")
    g = torch.Generator().manual_seed(5)
    logits, mask = torch.randn(2, 700, generator=g), random_bitmask(2, 700, g)
    expected = logits.clone()
    xgr.apply_token_bitmask_inplace(expected, mask)
    assert torch.equal(apply_token_bitmask_(logits.clone().to(device), mask.to(device)).cpu(), expected)


def test_selected_rows_only_and_padded_vocab(device):
    g = torch.Generator().manual_seed(6)
    logits = torch.randn(4, 80, generator=g)        # 80 columns; the mask covers 64
    mask = random_bitmask(2, 64, g)
    rows = torch.tensor([3, 1])
    ref = apply_token_bitmask_reference_(logits.clone(), mask, rows)
    out = apply_token_bitmask_(logits.clone().to(device), mask.to(device), rows.to(device)).cpu()
    assert torch.equal(out, ref)
    assert torch.equal(out[[0, 2]], logits[[0, 2]]) and torch.equal(out[:, 64:], logits[:, 64:])


def test_rejects_bad_shapes(device):
    with pytest.raises(ValueError, match="int32"):
        apply_token_bitmask_(torch.zeros(1, 32, device=device), torch.zeros(1, 1, dtype=torch.int64, device=device))
    with pytest.raises(ValueError, match="rows"):
        apply_token_bitmask_(torch.zeros(2, 32, device=device), torch.zeros(1, 1, dtype=torch.int32, device=device))
