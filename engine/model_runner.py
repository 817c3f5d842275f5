"""Loads a model onto the device and runs scheduled batches through it."""
from __future__ import annotations

from pathlib import Path

import torch

from engine.forward_batch import ForwardBatch
from engine.loader import load_state_dict
from engine.model_config import ModelConfig
from engine.models.llama import LlamaModel
from engine.scheduler import ScheduledBatch

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class ModelRunner:
    def __init__(self, path: Path, model_config: ModelConfig, dtype: str, max_positions: int, device: str = "cpu"):
        self.model_config = model_config
        state = load_state_dict(path)
        self.model = LlamaModel(model_config, state, _DTYPES[dtype], max_positions, device)

    def forward(self, scheduled: ScheduledBatch, pool) -> torch.Tensor:
        """Logits [num_sampled, vocab] for the requests of `scheduled` that reach their end."""
        reqs = scheduled.requests
        batch = ForwardBatch.build(
            token_ids=[r.all_ids[r.num_computed : r.num_computed + n] for r, n in zip(reqs, scheduled.extend_lens)],
            start_positions=[r.num_computed for r in reqs],
            kv_slots=[r.kv_slots[: r.num_computed + n] for r, n in zip(reqs, scheduled.extend_lens)],
            sample_rows=scheduled.sample,
        )
        return self.model.forward(batch, pool)
