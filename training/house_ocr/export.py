"""Write a trained checkpoint as the shipped model folder `models/house-ocr/`.

    python -m training.house_ocr.export --checkpoint runs/house-ocr/last.pt --out models/house-ocr

The folder is a Hugging Face-style checkpoint the engine loads by the built-in
name `house-ocr`: config.json, model.safetensors (fp32; decoder tensors under
Llama's names, plus projector.* and ctc_head.*), tokenizer.json (one token per
character) and tokenizer_config.json with the chat template.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from safetensors.torch import save_file

from engine.models.line_encoder import _SHA256 as ENCODER_SHA256
from training.house_ocr import charset
from training.house_ocr.model import CTC_WEIGHT, HouseOCR, HouseOCRConfig

CHAT_TEMPLATE = (
    "{%- set ns = namespace(images=0) -%}"
    "{{- bos_token -}}"
    "{%- for message in messages -%}"
    "{%- if message['content'] is not string -%}"
    "{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}"
    "{%- set ns.images = ns.images + 1 -%}"
    "<|begin_of_image|><|image|><|end_of_image|>"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if ns.images != 1 -%}"
    "{{- raise_exception('house-ocr reads exactly one image (a text-line crop) per request') -}}"
    "{%- endif -%}"
    "<|text|>"
)


def load_checkpoint(path: Path) -> HouseOCR:
    state = torch.load(path, weights_only=False, map_location="cpu")
    model = HouseOCR(HouseOCRConfig(**state["config"]))
    model.load_state_dict(state["model"])
    return model.eval()


def load_exported(folder: Path) -> HouseOCR:
    """The plain PyTorch model from a shipped folder (the inverse of `export`)."""
    from safetensors.torch import load_file

    config = json.loads((folder / "config.json").read_text())
    model = HouseOCR(HouseOCRConfig(
        hidden_size=config["hidden_size"], num_hidden_layers=config["num_hidden_layers"],
        num_attention_heads=config["num_attention_heads"], num_key_value_heads=config["num_key_value_heads"],
        intermediate_size=config["intermediate_size"], max_position_embeddings=config["max_position_embeddings"],
        rope_theta=config["rope_theta"], rms_norm_eps=config["rms_norm_eps"], vocab_size=config["vocab_size"],
        feature_dim=config["house_ocr"]["feature_dim"], merge=config["house_ocr"]["merge"]))
    state = {(k if k.startswith(("projector.", "ctc_head.")) else "decoder." + k): v
             for k, v in load_file(str(folder / "model.safetensors")).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"decoder.lm_head.weight"}, (missing, unexpected)
    model.decoder.tie_weights()
    return model.eval()


def export(model: HouseOCR, out: Path) -> None:
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    out.mkdir(parents=True, exist_ok=True)
    cfg = model.config
    tensors = {}
    for name, tensor in model.state_dict().items():
        if name == "decoder.lm_head.weight":
            continue   # tied to the embeddings
        tensors[name.removeprefix("decoder.")] = tensor.detach().float().contiguous()
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    config = {
        "architectures": ["HouseOcrForConditionalGeneration"],
        "model_type": "house_ocr",
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_hidden_layers": cfg.num_hidden_layers,
        "num_attention_heads": cfg.num_attention_heads,
        "num_key_value_heads": cfg.num_key_value_heads,
        "head_dim": cfg.hidden_size // cfg.num_attention_heads,
        "max_position_embeddings": cfg.max_position_embeddings,
        "rope_theta": cfg.rope_theta,
        "rms_norm_eps": cfg.rms_norm_eps,
        "hidden_act": "silu",
        "tie_word_embeddings": True,
        "bos_token_id": charset.BOS_ID,
        "eos_token_id": charset.EOS_ID,
        "pad_token_id": charset.PAD_ID,
        "image_token_id": charset.IMAGE_ID,
        "image_start_token_id": charset.IMAGE_START_ID,
        "image_end_token_id": charset.IMAGE_END_ID,
        "text_token_id": charset.TASK_TEXT_ID,
        "ctc_blank_id": charset.PAD_ID,
        "house_ocr": {
            "feature_dim": cfg.feature_dim,
            "merge": cfg.merge,
            "ctc_weight": CTC_WEIGHT,
            "encoder": "PP-OCRv4 text-line recogniser from rapidocr-onnxruntime 1.4.4, "
                       "features before its CTC head (transpose_51.tmp_0)",
            "encoder_sha256": ENCODER_SHA256,
        },
        "torch_dtype": "float32",
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (out / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": charset.BOS_ID, "eos_token_id": charset.EOS_ID, "pad_token_id": charset.PAD_ID}, indent=2)
        + "\n")

    tokenizer = Tokenizer(models.WordLevel({t: i for i, t in enumerate(charset.VOCAB)}, unk_token=charset.UNK))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in charset.SPECIAL_TOKENS])
    tokenizer.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": charset.BOS, "eos_token": charset.EOS, "unk_token": charset.UNK, "pad_token": charset.PAD,
        "additional_special_tokens": charset.SPECIAL_TOKENS[4:],
        "clean_up_tokenization_spaces": False,
        "model_max_length": cfg.max_position_embeddings,
        "chat_template": CHAT_TEMPLATE,
    }, indent=2, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("models/house-ocr"))
    args = parser.parse_args()
    export(load_checkpoint(args.checkpoint), args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
