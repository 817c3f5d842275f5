"""The decoder's elementwise steps beside attention, in the pair a model picks
with its attention backend: torch (the CPU path, the exact arithmetic the
engine always had) or Triton (fused kernels on CUDA).

| op                                    | returns                                          |
|---------------------------------------|--------------------------------------------------|
| `rms_norm(x, w, eps)`                 | w * (x * rsqrt(mean(x^2) + eps))                 |
| `add_rms_norm(x, residual, w, eps)`   | (rms_norm(residual + x), residual + x); Triton   |
|                                       | writes the sum into `residual` (callers pass one |
|                                       | they own)                                        |
| `silu_gate(gate_up)`                  | silu(gate) * up, gate the first half             |
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


class TorchLayerOps:
    name = "torch"

    @staticmethod
    def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        # Hugging Face's operation order, so fp32 results agree bit for bit.
        variance = x.pow(2).mean(-1, keepdim=True)
        return weight * (x * torch.rsqrt(variance + eps))

    def add_rms_norm(self, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                     eps: float) -> tuple[torch.Tensor, torch.Tensor]:
        h = residual + x
        return self.rms_norm(h, weight, eps), h

    @staticmethod
    def silu_gate(gate_up: torch.Tensor) -> torch.Tensor:
        gate, up = gate_up.chunk(2, dim=-1)
        return F.silu(gate) * up


class TritonLayerOps:
    name = "triton"

    def __init__(self):
        from kernels import rms_norm, silu_gate

        self._rms_norm, self._silu_gate = rms_norm.rms_norm, silu_gate.silu_gate

    def rms_norm(self, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        return self._rms_norm(x, weight, eps)

    def add_rms_norm(self, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                     eps: float) -> tuple[torch.Tensor, torch.Tensor]:
        return self._rms_norm(x.contiguous(), weight, eps, residual=residual), residual

    def silu_gate(self, gate_up: torch.Tensor) -> torch.Tensor:
        return self._silu_gate(gate_up)


def make_layer_ops(name: str) -> TorchLayerOps | TritonLayerOps:
    """The ops that go with attention backend `name`."""
    return TritonLayerOps() if name == "triton" else TorchLayerOps()
