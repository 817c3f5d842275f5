"""Tiny random-weight vision-language checkpoints for the VLM tests, built on disk
the way real ones are laid out (config.json, safetensors, tokenizer, chat
template, preprocessor_config.json), plus the Hugging Face reference run.

The tokenizer is byte-level with no merges (256 byte tokens + the model's
special tokens), so every id stays below the tiny vocabulary of 1024. The
configs name no EOS, so the reference always runs `max_new_tokens` (the
engine side runs with ignore_eos).
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import torch
from PIL import Image

VOCAB_SIZE = 1024
TEXT = dict(vocab_size=VOCAB_SIZE, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024)
WEIGHT_STD = 0.15
# Small pixel budgets keep images at a handful of tokens (28 px per merged token side).
PIXELS = {"shortest_edge": 28 * 28 * 2, "longest_edge": 28 * 28 * 48}

QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                 "<|image_pad|>", "<|video_pad|>"]
GLM_SPECIALS = ["<|endoftext|>", "[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>",
                "<|begin_of_image|>", "<|end_of_image|>", "<|image|>", "<|begin_of_video|>", "<|end_of_video|>",
                "<|video|>"]

# Chat templates in the shape of the real ones: an image part renders as its placeholder.
QWEN_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content %}"
    "{% if p.type == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ p.text }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
GLM_TEMPLATE = (
    "[gMASK]<sop>{% for m in messages %}<|{{ m.role }}|>\n"
    "{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content %}"
    "{% if p.type == 'image' %}<|begin_of_image|><|image|><|end_of_image|>{% else %}{{ p.text }}{% endif %}"
    "{% endfor %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


@dataclass
class TinyVlm:
    """A checkpoint folder and its Hugging Face reference. The processor classes
    cannot be built here (they insist on a torchvision video processor), so the
    reference inputs are made the way those processors make them: the image
    processor gives pixels and grids, and each image token in the prompt text
    is repeated once per merged patch before tokenizing."""

    path: Path
    model: torch.nn.Module   # the Hugging Face reference on the same weights
    tokenizer: object
    image_processor: object
    image_token: str
    family: str

    def chat_prompt(self, text: str, num_images: int = 1) -> str:
        content = [{"type": "image"} for _ in range(num_images)] + [{"type": "text", "text": text}]
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False)

    def hf_inputs(self, prompt: str, images: list[Image.Image]) -> dict:
        inputs: dict = {}
        if images:
            pixels = self.image_processor(images=images, return_tensors="pt")
            inputs.update(pixel_values=pixels["pixel_values"], image_grid_thw=pixels["image_grid_thw"])
            pieces = prompt.split(self.image_token)
            assert len(pieces) == len(images) + 1
            merge = self.image_processor.merge_size ** 2
            prompt = pieces[0] + "".join(self.image_token * (int(g.prod()) // merge) + rest
                                         for g, rest in zip(pixels["image_grid_thw"], pieces[1:]))
        ids = self.tokenizer(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
        image_id = self.tokenizer.convert_tokens_to_ids(self.image_token)
        inputs.update(input_ids=ids, attention_mask=torch.ones_like(ids),
                      mm_token_type_ids=(ids == image_id).to(torch.int32))
        return inputs

    def hf_greedy(self, prompt: str, images: list[Image.Image], max_new_tokens: int) -> list[int]:
        inputs = self.hf_inputs(prompt, images)
        with torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False)
        return out[0, inputs["input_ids"].shape[1]:].tolist()


def byte_tokenizer(specials: list[str], template: str):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    vocab = {ch: i for i, ch in enumerate(bytes_to_unicode().values())}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(specials)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                                   chat_template=template)


def build_tiny_vlm(family: str, path: Path, seed: int = 0) -> TinyVlm:
    """family: 'glm_ocr', 'qwen2_vl' or 'qwen2_5_vl'."""
    import transformers as tf

    glm = family == "glm_ocr"
    tok = byte_tokenizer(GLM_SPECIALS if glm else QWEN_SPECIALS, GLM_TEMPLATE if glm else QWEN_TEMPLATE)
    ids = tok.convert_tokens_to_ids
    vision = dict(depth=2, num_heads=2, patch_size=14, spatial_merge_size=2, temporal_patch_size=2)
    if glm:
        # Partial rotary: 8 of the 16 dims of a head rotate, in 3 sections that sum to 8 / 2.
        cfg = tf.GlmOcrConfig(
            text_config=dict(TEXT, rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                    "mrope_section": [1, 1, 2], "partial_rotary_factor": 0.5},
                             eos_token_id=None),
            vision_config=dict(vision, hidden_size=32, intermediate_size=64, out_hidden_size=64),
            image_token_id=ids("<|image|>"), video_token_id=ids("<|video|>"),
            image_start_token_id=ids("<|begin_of_image|>"), image_end_token_id=ids("<|end_of_image|>"),
            video_start_token_id=ids("<|begin_of_video|>"), video_end_token_id=ids("<|end_of_video|>"))
        model_cls, image_processor = tf.GlmOcrForConditionalGeneration, tf.Glm46VImageProcessorPil
        processor_type, image_token = "Glm46VImageProcessor", "<|image|>"
    else:
        text = dict(TEXT, rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
                    eos_token_id=None, bos_token_id=None)
        tokens = dict(image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
                      vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"))
        if family == "qwen2_vl":
            # Qwen2-VL's vision hidden_size is the merger's output: the text hidden size.
            cfg = tf.Qwen2VLConfig(text_config=text, vision_config=dict(vision, embed_dim=32, hidden_size=64,
                                                                        mlp_ratio=2), **tokens)
            model_cls = tf.Qwen2VLForConditionalGeneration
        else:
            cfg = tf.Qwen2_5_VLConfig(text_config=text, vision_config=dict(
                vision, hidden_size=32, intermediate_size=64, out_hidden_size=64, window_size=56,
                fullatt_block_indexes=[1]), **tokens)
            model_cls = tf.Qwen2_5_VLForConditionalGeneration
        image_processor, processor_type = tf.Qwen2VLImageProcessorPil, "Qwen2VLImageProcessor"
        image_token = "<|image_pad|>"
    torch.manual_seed(seed)
    model = model_cls(cfg).eval()
    spread_weights(model)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    pre = {"size": PIXELS, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
           "image_processor_type": processor_type}
    (path / "preprocessor_config.json").write_text(json.dumps(pre))
    ip = image_processor(size=PIXELS, patch_size=14, temporal_patch_size=2, merge_size=2)
    return TinyVlm(path, model, tok, ip, image_token, family)


def spread_weights(model: torch.nn.Module, std: float = WEIGHT_STD) -> None:
    """Redraw every weight wider than transformers' init (std 0.02), and every norm scale
    away from 1. With the default init, attention is nearly uniform and the logits barely
    depend on positions or on which image row went where, so greedy tokens would agree
    even with M-RoPE or the image splice wrong; these weights make such mistakes show."""
    with torch.no_grad():
        for module in model.modules():
            is_norm = "Norm" in type(module).__name__  # RMSNorm and LayerNorm classes
            for name, p in module.named_parameters(recurse=False):
                if is_norm and name == "weight":
                    p.uniform_(0.5, 1.5)
                else:
                    p.normal_(0.0, std)


def png_bytes(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def random_image(width: int, height: int, seed: int) -> Image.Image:
    """Random colour blocks of about 8 px: unlike per-pixel noise, two seeds give images
    that differ as a whole, so a model's output depends on which one it saw."""
    g = torch.Generator().manual_seed(seed)
    blocks = torch.randint(0, 256, (max(1, height // 8), max(1, width // 8), 3), generator=g, dtype=torch.uint8)
    return Image.fromarray(blocks.numpy(), "RGB").resize((width, height), Image.Resampling.NEAREST)


MTP_PREFIX = "model.language_model.layers."


def add_mtp_layer(vlm: TinyVlm, seed: int = 1, copy_head: bool = False) -> dict[str, torch.Tensor]:
    """Give a tiny GLM-OCR checkpoint one multi-token-prediction layer, stored as GLM-OCR stores
    it: decoder layer `num_hidden_layers` (here 2) holding a full GLM layer plus enorm, hnorm,
    eh_proj and shared_head.norm, and `num_nextn_predict_layers: 1` in the text config.
    Returns the layer's tensors by checkpoint name.

    Random weights (the default) test the layer's arithmetic. `copy_head=True` builds a layer
    whose prediction is the token it reads: its block adds nothing (zero output projections),
    eh_proj passes the token embedding through, and its own head is the embedding table, so a
    model repeating a token gets MTP drafts it accepts (tests of the accepted-draft paths)."""
    from safetensors.torch import load_file, save_file

    config = json.loads((vlm.path / "config.json").read_text())
    config["text_config"]["num_nextn_predict_layers"] = 1
    (vlm.path / "config.json").write_text(json.dumps(config))
    state = load_file(str(vlm.path / "model.safetensors"))
    p, hidden = MTP_PREFIX, TEXT["hidden_size"]
    g = torch.Generator().manual_seed(seed)
    mtp = {}
    for key, value in state.items():
        if key.startswith(p + "1."):
            new = torch.randn(value.shape, generator=g) * WEIGHT_STD
            if value.dim() == 1:   # norms: away from 1, as spread_weights draws them
                new = torch.rand(value.shape, generator=g) + 0.5
            mtp[key.replace(p + "1.", p + "2.")] = new
    norm = lambda: torch.rand(hidden, generator=g) + 0.5  # noqa: E731
    mtp.update({p + "2.enorm.weight": norm(), p + "2.hnorm.weight": norm(), p + "2.shared_head.norm.weight": norm(),
                p + "2.eh_proj.weight": torch.randn(hidden, 2 * hidden, generator=g) * WEIGHT_STD})
    if copy_head:
        mtp[p + "2.self_attn.o_proj.weight"].zero_()
        mtp[p + "2.mlp.down_proj.weight"].zero_()
        mtp[p + "2.eh_proj.weight"] = torch.cat([torch.eye(hidden), torch.zeros(hidden, hidden)], dim=1)
        mtp[p + "2.enorm.weight"] = torch.ones(hidden)
        mtp[p + "2.shared_head.norm.weight"] = torch.ones(hidden)
        mtp[p + "2.shared_head.head.weight"] = state["model.language_model.embed_tokens.weight"].clone()
    state.update(mtp)
    save_file(state, str(vlm.path / "model.safetensors"), metadata={"format": "pt"})
    return mtp
