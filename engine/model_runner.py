"""Loads a model onto the device and runs scheduled batches through it."""
from __future__ import annotations

from pathlib import Path

import torch

from engine.forward_batch import ForwardBatch
from engine.loader import load_state_dict
from engine.model_config import ModelConfig
from engine.models.registry import architecture, resolve
from engine.multimodal.batch_inputs import batch_input_embeds, batch_positions
from engine.multimodal.encoder_cache import EncoderCache
from engine.scheduler import ScheduledBatch

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_device(name: str) -> torch.device:
    """The device `EngineConfig.device` names; "auto" is CUDA when one is visible. Asking for
    CUDA where there is none is an error, never a quiet run on the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(f"device {name!r} was asked for but torch sees no CUDA device "
                               f"(torch {torch.__version__}, CUDA build: {torch.version.cuda is not None})")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise RuntimeError(f"device {name!r}: only {torch.cuda.device_count()} CUDA devices are visible")
    return device


def resolve_attention_backend(name: str, device: torch.device) -> str:
    if name == "auto":
        return "triton" if device.type == "cuda" else "torch"
    return name


def free_device_memory(device: torch.device) -> int:
    """Bytes free on a CUDA device now (after the weights are loaded)."""
    torch.cuda.synchronize(device)
    free, _total = torch.cuda.mem_get_info(device)
    return int(free)


class ModelRunner:
    def __init__(self, path: Path, model_config: ModelConfig, dtype: str, max_positions: int, device: str = "cpu",
                 encoder_cache_bytes: int = 0, attention_backend: str = "torch", cuda_graph_max_batch: int = 0):
        self.model_config = model_config
        self.device = device = resolve_device(str(device))
        self.attention_backend = resolve_attention_backend(attention_backend, device)
        state = load_state_dict(path)
        self.model = load_model(path, model_config, state, _DTYPES[dtype], max_positions, device,
                                self.attention_backend)
        self.is_multimodal = model_config.is_multimodal
        self.encoder_cache = EncoderCache(encoder_cache_bytes)  # vision-encoder outputs by image hash
        self.max_positions = max_positions
        # Decode steps from CUDA graphs: text models on the triton backend only (engine/cuda_graph.py).
        # On a CPU (tests, under Triton's interpreter) the same static-buffer steps run eagerly.
        self.cuda_graph_max_batch = (cuda_graph_max_batch if self.attention_backend == "triton"
                                     and not self.is_multimodal else 0)
        self.decode_graphs = None  # built on the first decode step, when the pool is known

    def forward(self, scheduled: ScheduledBatch, pool) -> torch.Tensor:
        """Logits for the requests of `scheduled` that reach their end: one row each, or
        1 + len(spec_ids) rows for a request verifying drafted tokens."""
        reqs = scheduled.requests
        batch = ForwardBatch.build(
            # a request verifying a draft runs its pending token, then the drafted ones
            token_ids=[r.token_ids(r.num_computed, r.num_computed + n - len(r.spec_ids)) + r.spec_ids
                       for r, n in zip(reqs, scheduled.extend_lens)],
            start_positions=[r.num_computed for r in reqs],
            kv_slots=[r.kv_slots[: r.num_computed + n] for r, n in zip(reqs, scheduled.extend_lens)],
            sample_rows=scheduled.sample,
            owner_ids=[r.owner_id for r in reqs] if pool.debug else None,
            logit_counts=[1 + len(r.spec_ids) for r in reqs],
        )
        if self.is_multimodal:  # M-RoPE positions for every row; image embeddings where a chunk has them
            batch.positions = batch_positions(reqs, scheduled.extend_lens)
            batch.input_embeds = batch_input_embeds(self.model, self.encoder_cache, reqs, scheduled.extend_lens,
                                                    batch.input_ids)
        if self.cuda_graph_max_batch and not self.model.capture_hidden:
            if self.decode_graphs is None:
                from engine.cuda_graph import DecodeGraphs

                self.decode_graphs = DecodeGraphs(self.model, pool, self.cuda_graph_max_batch, self.max_positions,
                                                  capture=self.device.type == "cuda")
            if self.decode_graphs.can_run(batch):
                return self.decode_graphs.run(batch)
        return self.model.forward(batch, pool)


def load_model(path: Path, config: ModelConfig, state: dict[str, torch.Tensor], dtype: torch.dtype,
               max_positions: int, device: torch.device | str, attention_backend: str = "torch"):
    """The model class the checkpoint's architecture names (engine/models/registry.py), imported
    now: the VLM modules import transformers' vision code."""
    arch = architecture(config.architecture)
    model_class = resolve(arch.model)
    if arch.multimodal:   # reads its vision settings from the checkpoint folder
        return model_class(path, config, state, dtype, max_positions, device, attention_backend)
    return model_class(config, state, dtype, max_positions, device, attention_backend)
