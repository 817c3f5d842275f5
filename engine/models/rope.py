"""Rotary position embeddings (the half-split layout Hugging Face uses)."""
from __future__ import annotations

import math

import torch


def rope_inv_freq(head_dim: int, theta: float, scaling: dict) -> torch.Tensor:
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "default":
        return inv_freq
    if kind == "linear":
        return inv_freq / float(scaling["factor"])
    if kind == "llama3":
        factor = float(scaling["factor"])
        low, high = float(scaling["low_freq_factor"]), float(scaling["high_freq_factor"])
        old_len = float(scaling["original_max_position_embeddings"])
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > old_len / low, inv_freq / factor, inv_freq)
        smooth = (old_len / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old_len / high) & ~(wavelen > old_len / low)
        return torch.where(medium, smoothed, scaled)
    raise ValueError(f"rope scaling type {kind!r} is not supported")


def _rotary_kernel():
    # Imported only when asked for: Triton fixes interpreter-or-GPU when a kernel module is imported.
    from kernels.rotary import apply_rotary_

    return apply_rotary_


class RotaryEmbedding:
    """Precomputed cos/sin for every position up to max_positions."""

    def __init__(self, head_dim: int, theta: float, scaling: dict, max_positions: int, dtype: torch.dtype,
                 device: torch.device | str = "cpu", fused: bool = False):
        inv_freq = rope_inv_freq(head_dim, theta, scaling)
        freqs = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)  # [max_positions, head_dim]
        self.cos = emb.cos().to(device=device, dtype=dtype)
        self.sin = emb.sin().to(device=device, dtype=dtype)
        self.kernel = _rotary_kernel() if fused else None  # Triton, in place: the CUDA path

    def apply(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        # x: [tokens, heads, head_dim]
        if self.kernel is not None:
            half = self.cos.shape[1] // 2  # the halves of the table repeat: the kernel reads one
            return self.kernel(x, positions, self.cos[:, :half], self.sin[:, :half])
        cos = self.cos.index_select(0, positions).unsqueeze(1)
        sin = self.sin.index_select(0, positions).unsqueeze(1)
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + rotated * sin


class MRotaryEmbedding:
    """Multimodal rotary embedding (M-RoPE) of Qwen2-VL and GLM-V.

    A token has three positions (temporal, height, width; all equal for text).
    The rotary frequencies are cut into `sections`, and section i rotates by
    position i. Only the first `rotary_dim` dims of a head rotate (partial
    rotary); the rest pass through. Qwen2-VL pairs dim j with j + rotary_dim/2
    (half split); GLM pairs neighbours (2j, 2j+1) (`interleaved`).
    """

    def __init__(self, head_dim: int, rotary_dim: int, theta: float, sections: tuple[int, ...],
                 max_positions: int, dtype: torch.dtype, interleaved: bool, device: torch.device | str = "cpu",
                 fused: bool = False):
        inv_freq = 1.0 / (theta ** (torch.arange(0, rotary_dim, 2, dtype=torch.int64).float() / rotary_dim))
        assert len(sections) == 3 and sum(sections) == inv_freq.numel(), (
            f"mrope_section {sections} must have 3 parts summing to rotary_dim/2 = {inv_freq.numel()}")
        assert rotary_dim <= head_dim and rotary_dim % 2 == 0
        # Same float ops as the reference (position * inv_freq, then cos/sin), so tables agree bit for bit.
        freqs = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv_freq)  # [max_positions, rotary_dim/2]
        self.cos = freqs.cos().to(device=device, dtype=dtype)
        self.sin = freqs.sin().to(device=device, dtype=dtype)
        sections_t = torch.tensor(sections)
        self.section_of_freq = torch.repeat_interleave(torch.arange(3), sections_t).to(device)  # [rotary_dim/2]
        self.freq_index = torch.arange(inv_freq.numel(), device=device)[:, None]
        self.rotary_dim = rotary_dim
        self.interleaved = interleaved
        self.sections = tuple(sections)
        self.kernel = _rotary_kernel() if fused else None  # Triton, in place: the CUDA path

    def apply(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        # x: [tokens, heads, head_dim]; positions: [3, tokens] (or [tokens] for text-only batches)
        if self.kernel is not None:
            if positions.dim() == 1:
                positions = positions.expand(3, -1)
            return self.kernel(x, positions, self.cos, self.sin, self.sections, self.interleaved)
        if positions.dim() == 1:
            positions = positions.expand(3, -1)
        rows = positions[self.section_of_freq]                    # [rotary_dim/2, tokens]: each freq's position
        cos = self.cos[rows, self.freq_index].T                   # [tokens, rotary_dim/2]
        sin = self.sin[rows, self.freq_index].T
        x_rot, x_pass = x[..., : self.rotary_dim], x[..., self.rotary_dim:]
        if self.interleaved:
            cos, sin = cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)
            rotated = torch.stack((-x_rot[..., 1::2], x_rot[..., 0::2]), dim=-1).flatten(-2)
        else:
            cos, sin = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
            half = self.rotary_dim // 2
            rotated = torch.cat((-x_rot[..., half:], x_rot[..., :half]), dim=-1)
        out = x_rot * cos.unsqueeze(1) + rotated * sin.unsqueeze(1)
        return out if x_pass.shape[-1] == 0 else torch.cat((out, x_pass), dim=-1)
