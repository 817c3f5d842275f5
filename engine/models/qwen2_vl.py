"""Qwen2-VL and Qwen2.5-VL.

The text decoder is the Qwen2 decoder (our Llama-family model over the paged
KV pool: q/k/v biases, SwiGLU MLP) with its rotary embedding swapped for
M-RoPE: each token carries (temporal, height, width) positions, so
`ForwardBatch.positions` is [3, num_tokens] for these models. Qwen2-VL's
attention uses hidden_size / num_heads as the head size, like ModelConfig.

The two generations differ only in the vision tower (Qwen2.5-VL adds window
attention and a gated MLP), which transformers provides; see vision_tower.py.
"""
from __future__ import annotations

from pathlib import Path

import torch

from engine.forward_batch import ForwardBatch
from engine.model_config import ModelConfig
from engine.models.hooks import ModelHooks
from engine.models.llama import LlamaModel
from engine.models.rope import MRotaryEmbedding
from engine.models.vision_tower import VisionTower

QWEN2_VL_ARCHITECTURES = ("Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration")


class Qwen2VLModel(ModelHooks):
    is_multimodal = True

    def __init__(self, path: Path, config: ModelConfig, state: dict[str, torch.Tensor], dtype: torch.dtype,
                 max_positions: int, device: torch.device | str = "cpu", attention_backend: str = "torch"):
        assert config.architecture in QWEN2_VL_ARCHITECTURES and config.mrope_section
        if config.head_dim != config.hidden_size // config.num_heads:
            raise ValueError("Qwen2-VL attention uses hidden_size / num_attention_heads as its head size; "
                             f"this config gives head_dim {config.head_dim}")
        self.config = config
        self.visual = VisionTower(path, config.architecture, state, dtype, device)
        self.language = LlamaModel(config, state, dtype, max_positions, device, attention_backend)
        rotary_dim = int(config.head_dim * config.partial_rotary_factor)
        self.language.rope = MRotaryEmbedding(config.head_dim, rotary_dim, config.rope_theta, config.mrope_section,
                                              max_positions, dtype, interleaved=False, device=device,
                                              fused=attention_backend == "triton")

    def embed_tokens(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.language.embed[input_ids]  # [num_tokens, hidden]

    def encode_image(self, pixel_values: torch.Tensor, grid_thw: tuple[int, int, int]) -> torch.Tensor:
        return self.visual.encode(pixel_values, grid_thw)

    def forward(self, batch: ForwardBatch, pool) -> torch.Tensor:
        return self.language.forward(batch, pool)
