"""Loading vision-language checkpoints: both weight layouts (transformers 5's
`model.language_model.*` + `model.visual.*`, and the released Qwen2-VL files'
`model.layers.*` + `visual.*`), GLM-OCR's multi-token-prediction layer, and
the older flat Qwen2-VL config.json."""
from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.config import EngineConfig
from engine.engine import Engine
from engine.model_config import ModelConfig
from engine.sampling_params import SamplingParams
from tests.engine.tiny_vlm import build_tiny_vlm, png_bytes, random_image


def greedy(n: int = 12) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True)


def rewrite_weights(folder, rename=None, extra=None) -> None:
    state = load_file(str(folder / "model.safetensors"))
    if rename is not None:
        state = {rename(k): v for k, v in state.items()}
    state.update(extra or {})
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})


def test_released_qwen2_vl_layout_loads(tmp_path):
    vlm = build_tiny_vlm("qwen2_vl", tmp_path / "saved")
    released = tmp_path / "released"
    shutil.copytree(vlm.path, released)

    def released_name(name: str) -> str:
        for old, new in (("model.language_model.", "model."), ("model.visual.", "visual.")):
            if name.startswith(old):
                return new + name[len(old):]
        return name

    rewrite_weights(released, released_name)
    assert any(k.startswith("visual.") for k in load_file(str(released / "model.safetensors")))
    eng = Engine(EngineConfig(model=str(released), kv_tokens=1024))
    image = random_image(90, 60, seed=1)
    prompt = vlm.chat_prompt("Read the text.")
    out = eng.generate([prompt], greedy(), images=[[png_bytes(image)]])[0]
    assert out.token_ids == vlm.hf_greedy(prompt, [image], 12)


def test_glm_ocr_mtp_layer_is_loaded_and_exposed(tmp_path):
    vlm = build_tiny_vlm("glm_ocr", tmp_path / "glm")
    config = json.loads((vlm.path / "config.json").read_text())
    config["text_config"]["num_nextn_predict_layers"] = 1
    (vlm.path / "config.json").write_text(json.dumps(config))
    # GLM-OCR stores its MTP layer as decoder layer num_hidden_layers (here 2): a full
    # layer (copied from layer 1) plus the MTP projections and its shared-head norm.
    state = load_file(str(vlm.path / "model.safetensors"))
    prefix = "model.language_model.layers."
    hidden = 64
    g = torch.Generator().manual_seed(0)
    mtp = {k.replace(prefix + "1.", prefix + "2."): v.clone() for k, v in state.items() if k.startswith(prefix + "1.")}
    mtp.update({prefix + "2.enorm.weight": torch.ones(hidden), prefix + "2.hnorm.weight": torch.ones(hidden),
                prefix + "2.eh_proj.weight": torch.randn(hidden, 2 * hidden, generator=g),
                prefix + "2.shared_head.norm.weight": torch.ones(hidden)})
    rewrite_weights(vlm.path, extra=mtp)

    eng = Engine(EngineConfig(model=str(vlm.path), kv_tokens=1024))
    model = eng.runner.model
    assert eng.model_config.num_mtp_layers == 1 and len(model.mtp_layers) == 1
    layer = model.mtp_layers[0]
    assert torch.equal(layer.eh_proj, mtp[prefix + "2.eh_proj.weight"])
    assert torch.equal(layer.block.w_down, state[prefix + "1.mlp.down_proj.weight"])
    assert layer.head is None and layer.extra == {}
    assert len(model.layers) == 2  # the MTP layer is not run as a decoder layer
    image = random_image(90, 60, seed=2)
    prompt = vlm.chat_prompt("Read the text.")
    out = eng.generate([prompt], greedy(), images=[[png_bytes(image)]])[0]
    assert out.token_ids == vlm.hf_greedy(prompt, [image], 12)


def test_declared_mtp_layer_missing_from_weights_is_an_error(tmp_path):
    vlm = build_tiny_vlm("glm_ocr", tmp_path / "glm")
    config = json.loads((vlm.path / "config.json").read_text())
    config["text_config"]["num_nextn_predict_layers"] = 1
    (vlm.path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="MTP"):
        Engine(EngineConfig(model=str(vlm.path), kv_tokens=1024))


def test_flat_qwen2_vl_config_of_released_checkpoints(tmp_path):
    # The shape of Qwen2-VL-2B-Instruct's config.json (transformers 4.x): text settings at the top.
    (tmp_path / "config.json").write_text(json.dumps({
        "architectures": ["Qwen2VLForConditionalGeneration"], "model_type": "qwen2_vl",
        "hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28, "num_attention_heads": 12,
        "num_key_value_heads": 2, "vocab_size": 151936, "max_position_embeddings": 32768, "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
        "tie_word_embeddings": True, "bos_token_id": 151643, "eos_token_id": 151645,
        "image_token_id": 151655, "video_token_id": 151656, "vision_start_token_id": 151652,
        "vision_end_token_id": 151653, "vision_config": {"depth": 32, "embed_dim": 1280, "hidden_size": 1536,
                                                         "spatial_merge_size": 2, "patch_size": 14}}))
    mc = ModelConfig.from_dir(tmp_path)
    assert mc.is_multimodal and mc.image_token_id == 151655
    assert (mc.image_start_token_id, mc.image_end_token_id) == (151652, 151653)
    assert mc.mrope_section == (16, 24, 24) and mc.rope_scaling == {} and mc.rope_theta == 1e6
    assert mc.head_dim == 128 and mc.tie_word_embeddings and mc.spatial_merge_size == 2
    assert mc.eos_token_ids == (151645,)
