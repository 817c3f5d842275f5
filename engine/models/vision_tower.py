"""The vision encoders of the VLMs we serve, reused from transformers (the issue
allows it): the module class is transformers', the weights are ours (read by
engine.loader under `visual.*`), and it runs once per image, not per step.

Only the text decoder runs over the paged KV pool; an image's encoder output
is a plain tensor [num_image_tokens, hidden] that the model runner splices in
where the image's placeholder tokens are.
"""
from __future__ import annotations

import importlib
from pathlib import Path

import torch

from engine.models.registry import architecture as architecture_row

_PREFIX = "visual."


class VisionTower:
    def __init__(self, path: Path, architecture: str, state: dict[str, torch.Tensor], dtype: torch.dtype,
                 device: torch.device | str = "cpu"):
        from transformers import AutoConfig

        module_name, class_name = architecture_row(architecture).vision_tower   # engine/models/registry.py
        tower_cls = getattr(importlib.import_module(module_name), class_name)
        vision_config = AutoConfig.from_pretrained(str(path)).vision_config
        self.module = tower_cls._from_config(vision_config, dtype=dtype).eval().requires_grad_(False)
        weights = {k[len(_PREFIX):]: state.pop(k) for k in [k for k in state if k.startswith(_PREFIX)]}
        missing, unexpected = self.module.load_state_dict(weights, strict=False)
        if missing or unexpected:
            raise ValueError(f"{path}: vision weights do not match {class_name}: "
                             f"missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}")
        self.module.to(device)
        self.dtype, self.device = dtype, torch.device(device)
        self.spatial_merge_size = int(vision_config.spatial_merge_size)

    @torch.inference_mode()
    def encode(self, pixel_values: torch.Tensor, grid_thw: tuple[int, int, int]) -> torch.Tensor:
        """pixel_values [num_patches, patch_dim] of one image -> [num_patches / merge^2, hidden]."""
        grid = torch.tensor([grid_thw], dtype=torch.int64, device=self.device)
        out = self.module(pixel_values.to(device=self.device, dtype=self.dtype), grid_thw=grid).pooler_output
        t, h, w = grid_thw
        assert out.shape[0] == t * h * w // self.spatial_merge_size ** 2, (out.shape, grid_thw)
        return out
