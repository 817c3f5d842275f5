"""The architecture facts the engine needs, read from a checkpoint's config.json (which
architectures run, and which of them take images: engine/models/registry.py)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from engine.models.registry import architecture


@dataclass(frozen=True)
class ModelConfig:
    architecture: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    max_position_embeddings: int
    tie_word_embeddings: bool
    rope_scaling: dict = field(default_factory=dict)
    eos_token_ids: tuple[int, ...] = ()
    bos_token_id: int | None = None
    # Rotary variants: only the first `partial_rotary_factor` of each head rotates; with
    # `mrope_section` (M-RoPE) the frequencies split into (temporal, height, width) sections.
    partial_rotary_factor: float = 1.0
    mrope_section: tuple[int, ...] = ()
    # Vision-language models: each image's tokens stand where one `image_token_id` stood,
    # between the start and end tokens; `spatial_merge_size`^2 patches make one token.
    image_token_id: int | None = None
    image_start_token_id: int | None = None
    image_end_token_id: int | None = None
    spatial_merge_size: int = 1
    num_mtp_layers: int = 0        # multi-token-prediction layers stored after the decoder layers

    @property
    def is_multimodal(self) -> bool:
        return self.image_token_id is not None

    @classmethod
    def from_dir(cls, path: str | Path) -> "ModelConfig":
        path = Path(path)
        raw = json.loads((path / "config.json").read_text())
        archs = raw.get("architectures") or ["LlamaForCausalLM"]
        arch = archs[0]
        multimodal = architecture(arch).multimodal   # ValueError for an architecture not in the table
        top = raw
        # VLM files nest the decoder's settings in text_config; they win over the top level.
        raw = {**top, **top.get("text_config", {})}
        num_heads = raw["num_attention_heads"]
        hidden = raw["hidden_size"]
        # transformers 5 keeps rope settings in `rope_parameters`; older files use rope_theta/rope_scaling.
        rope = dict(raw.get("rope_parameters") or raw.get("rope_scaling") or {})
        theta = rope.get("rope_theta", raw.get("rope_theta", 10000.0))
        mrope_section = tuple(rope.get("mrope_section") or ())
        if rope.get("type") == "mrope":  # Qwen2-VL's older files name M-RoPE as a scaling type
            rope.pop("type")
        partial_rotary = float(rope.get("partial_rotary_factor", raw.get("partial_rotary_factor", 1.0)))
        eos = raw.get("eos_token_id")
        gen_path = path / "generation_config.json"
        if gen_path.exists():
            eos = json.loads(gen_path.read_text()).get("eos_token_id", eos)
        eos_ids = tuple(eos) if isinstance(eos, list) else ((eos,) if eos is not None else ())
        return cls(
            architecture=arch,
            vocab_size=raw["vocab_size"],
            hidden_size=hidden,
            intermediate_size=raw["intermediate_size"],
            num_layers=raw["num_hidden_layers"],
            num_heads=num_heads,
            num_kv_heads=raw.get("num_key_value_heads") or num_heads,
            head_dim=raw.get("head_dim") or hidden // num_heads,
            rms_norm_eps=raw.get("rms_norm_eps", 1e-6),
            rope_theta=float(theta),
            max_position_embeddings=raw.get("max_position_embeddings", 4096),
            # Older VLM files put the tie in text_config; transformers honours either place.
            tie_word_embeddings=bool(top.get("tie_word_embeddings") or raw.get("tie_word_embeddings")),
            rope_scaling={k: v for k, v in rope.items()
                          if k not in ("rope_theta", "mrope_section", "partial_rotary_factor")},
            eos_token_ids=eos_ids,
            bos_token_id=raw.get("bos_token_id"),
            partial_rotary_factor=partial_rotary,
            mrope_section=mrope_section,
            image_token_id=top.get("image_token_id") if multimodal else None,
            # GLM names the image's brackets image_start/end; Qwen2-VL names them vision_start/end.
            image_start_token_id=top.get("image_start_token_id", top.get("vision_start_token_id")),
            image_end_token_id=top.get("image_end_token_id", top.get("vision_end_token_id")),
            spatial_merge_size=int((top.get("vision_config") or {}).get("spatial_merge_size", 1)),
            num_mtp_layers=int(raw.get("num_nextn_predict_layers") or 0),
        )
