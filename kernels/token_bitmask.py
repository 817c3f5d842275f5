"""Applying a grammar's token bitmask to the logits in place, in Triton.

xgrammar packs the allowed next tokens of a row into int32 words: token t is
allowed when bit t % 32 of word t // 32 is set. A disallowed token's logit
becomes -inf. Columns past 32 * words (a vocabulary padded beyond the
tokenizer's) are left as they are, as xgrammar's own kernels do."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels.triton_utils import check_device


@triton.jit
def _bitmask_kernel(LOGITS, BITMASK, ROWS, stride_l, stride_b, n_cols, BLOCK: tl.constexpr):
    row = tl.load(ROWS + tl.program_id(0)).to(tl.int64)  # logits row; the bitmask row is the program's
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_cols
    words = tl.load(BITMASK + tl.program_id(0) * stride_b + offs // 32, mask=mask, other=-1)
    allowed = ((words >> (offs % 32)) & 1) != 0
    tl.store(LOGITS + row * stride_l + offs, float("-inf"), mask=mask & ~allowed)


def apply_token_bitmask_(logits: torch.Tensor, bitmask: torch.Tensor,
                         rows: torch.Tensor | None = None) -> torch.Tensor:
    """logits [batch, vocab] float, modified in place; bitmask [n, words] int32 masks logits
    rows `rows` ([n] int, default 0..n-1). Returns logits."""
    if logits.dim() != 2 or bitmask.dim() != 2 or bitmask.dtype != torch.int32:
        raise ValueError(f"logits must be [batch, vocab] and bitmask [n, words] int32, got "
                         f"{tuple(logits.shape)} and {tuple(bitmask.shape)} {bitmask.dtype}")
    if rows is None:
        if bitmask.shape[0] != logits.shape[0]:
            raise ValueError(f"bitmask has {bitmask.shape[0]} rows for {logits.shape[0]} logits rows")
        rows = torch.arange(logits.shape[0], device=logits.device)
    elif rows.shape != (bitmask.shape[0],):
        raise ValueError(f"rows {tuple(rows.shape)} must be [{bitmask.shape[0]}]")
    if logits.stride(-1) != 1 or bitmask.stride(-1) != 1:
        raise ValueError("logits and bitmask must be contiguous in their last dim")
    if not (logits.device == bitmask.device == rows.device):
        raise ValueError("logits, bitmask and rows must be on one device")
    check_device(logits)
    n_cols = min(logits.shape[1], bitmask.shape[1] * 32)
    if bitmask.shape[0] == 0 or n_cols == 0:
        return logits
    block = 1024
    _bitmask_kernel[(bitmask.shape[0], triton.cdiv(n_cols, block))](
        logits, bitmask, rows, logits.stride(0), bitmask.stride(0), n_cols, BLOCK=block)
    return logits


def apply_token_bitmask_reference_(logits: torch.Tensor, bitmask: torch.Tensor,
                                   rows: torch.Tensor | None = None) -> torch.Tensor:
    rows = torch.arange(logits.shape[0]) if rows is None else rows.long().cpu()
    n_cols = min(logits.shape[1], bitmask.shape[1] * 32)
    bits = (bitmask.cpu().long().unsqueeze(-1) >> torch.arange(32)) & 1  # [n, words, 32]
    allowed = bits.reshape(bitmask.shape[0], -1)[:, :n_cols].bool().to(logits.device)
    view = logits[rows.to(logits.device), :n_cols]
    logits[rows.to(logits.device), :n_cols] = view.masked_fill(~allowed, float("-inf"))
    return logits
