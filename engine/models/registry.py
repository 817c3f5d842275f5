"""Every checkpoint architecture the engine runs, in one table (config.json's `architectures[0]`
-> how to build and feed its model). `model_config.py` refuses the names not here and reads
an image token only for the multimodal ones, `model_runner.load_model` builds the model class,
`multimodal/prompt_builder.py` picks the image preprocessor, `multimodal/image_processor.py`
the transformers processor a checkpoint leaves unnamed, `models/vision_tower.py` the encoder.

Classes are named by dotted path ("module:Class") and imported when a checkpoint asks for
them: the VLM modules import transformers' vision code, and this table imports no engine
module, so everything above can read it without an import circle
(tests/test_import_graph.py).

To add a model: its class in engine/models/<name>.py (the hooks of `models/hooks.py` where it
drafts, rescores or has MTP layers), then one row below.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Architecture:
    """How the engine runs one architecture.

    | field           | meaning                                                            |
    |-----------------|--------------------------------------------------------------------|
    | model           | "module:Class" of the model. A multimodal one is built as          |
    |                 | Class(path, config, state, dtype, max_positions, device, backend)  |
    |                 | (it reads its vision settings from the checkpoint folder); a text  |
    |                 | one as Class(config, state, dtype, max_positions, device, backend) |
    | multimodal      | takes images: config.json's `image_token_id` is read, and a prompt |
    |                 | builder expands each image placeholder into the image's tokens     |
    | preprocessor    | "module:Class" of its own image preprocessor, built with no        |
    |                 | arguments (house-ocr: line crop -> encoder features); None:        |
    |                 | transformers' image processor (`multimodal/image_processor.py`)    |
    | image_processor | transformers' processor type where preprocessor_config.json names  |
    |                 | none                                                               |
    | vision_tower    | (transformers module, class) of its vision encoder, or None        |
    """

    model: str
    multimodal: bool = False
    preprocessor: str | None = None
    image_processor: str | None = None
    vision_tower: tuple[str, str] | None = None


_LLAMA = Architecture("engine.models.llama:LlamaModel")
_QWEN2_VL = dict(model="engine.models.qwen2_vl:Qwen2VLModel", multimodal=True, image_processor="Qwen2VLImageProcessor")

# In the order the error for an unsupported architecture lists them.
ARCHITECTURES: dict[str, Architecture] = {
    "LlamaForCausalLM": _LLAMA,
    "MistralForCausalLM": _LLAMA,
    "Qwen2ForCausalLM": _LLAMA,
    "GlmOcrForConditionalGeneration": Architecture(
        "engine.models.glm_ocr:GlmOcrModel", multimodal=True, image_processor="Glm46VImageProcessor",
        vision_tower=("transformers.models.glm_ocr.modeling_glm_ocr", "GlmOcrVisionModel")),
    "Qwen2VLForConditionalGeneration": Architecture(
        **_QWEN2_VL, vision_tower=("transformers.models.qwen2_vl.modeling_qwen2_vl",
                                   "Qwen2VisionTransformerPretrainedModel")),
    "Qwen2_5_VLForConditionalGeneration": Architecture(
        **_QWEN2_VL, vision_tower=("transformers.models.qwen2_5_vl.modeling_qwen2_5_vl",
                                   "Qwen2_5_VisionTransformerPretrainedModel")),
    "HouseOcrForConditionalGeneration": Architecture(
        "engine.models.house_ocr:HouseOcrModel", multimodal=True,
        preprocessor="engine.models.house_ocr:HouseOcrPreprocessor"),
}


def architecture(name: str) -> Architecture:
    """The table's row for `name`; ValueError naming what runs where there is none."""
    if name not in ARCHITECTURES:
        raise ValueError(f"unsupported architecture {name!r}; this engine runs {', '.join(ARCHITECTURES)}")
    return ARCHITECTURES[name]


def resolve(dotted: str):
    """The object a "module:Name" path names, importing its module now."""
    module, _, name = dotted.partition(":")
    return getattr(importlib.import_module(module), name)
