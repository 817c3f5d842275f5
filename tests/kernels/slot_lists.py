"""Slot lists shaped like the engine's: per request, pool slots with holes between them."""
from __future__ import annotations

import torch


def scattered_slots(lens: list[int], num_slots: int, generator: torch.Generator) -> list[torch.Tensor]:
    """Per request, distinct slots spread over the pool with holes between them (never slot 0)."""
    perm = torch.randperm(num_slots - 1, generator=generator)[: sum(lens)] + 1
    return list(perm.split(lens))


def csr(lens: list[int], device) -> torch.Tensor:
    return torch.tensor([0] + lens, dtype=torch.int32).cumsum(0, dtype=torch.int32).to(device)
