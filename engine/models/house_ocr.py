"""The house OCR model (architecture `HouseOcrForConditionalGeneration`), served
through the same vision-language path as GLM-OCR and Qwen2-VL.

    line crop -> PP-OCRv4 recogniser features [T, 120] (frozen, ONNX; line_encoder.py)
              -> pairs of frames [ceil(T/2), 240] -> LayerNorm -> Linear -> GELU -> Linear  (projector)
              -> image tokens in  <s> <|begin_of_image|> <|image|> x N <|end_of_image|> <|text|>
              -> a Llama decoder over the paged KV pool (our llama.py) -> characters, </s>

The encoder runs when a request is built (`HouseOcrPreprocessor.preprocess`,
on the caller's thread, like other models' image processors), not in the
engine loop: what a request carries as its "pixel values" are the encoder's
features [T, 120], and `encode_image` only applies the projector. On two cores
the encoder of the next crops then overlaps the decoder steps of the current
ones, and a retracted request re-projects without re-running the encoder.

Positions are plain 1-D: an image is given the grid (1, 1, N) with merge size 1,
so the multimodal path's M-RoPE rows are (p, p, p + k) for image token k and
equal for text; the width row is the sequence index, which the decoder's
ordinary RoPE reads. The prefix cache keys image tokens by the crop's content
hash like every VLM here, and `<|text|>` after the image is the shared task
prefix. The CTC draft head (`ctc_head.*`) is loaded and exposed as `ctc_draft`.

Decoding: where the decoder's greedy reading of a line differs from the CTC
head's, the engine keeps whichever scores higher under both heads,
w log P_ctc + (1 - w) log P_dec (`rescore`; w is `house_ocr.ctc_weight` in
config.json, the reference rule is `HouseOCR.decode` in training/house_ocr/
model.py). Only plain greedy requests with a draft and no stop conditions of
their own are rescored (logprobs may be asked for: a kept draft reports its
tokens' decoder log-probs), and their text is handed back when the line is done.

The reference this is tested against is training/house_ocr/model.py (plain
PyTorch, the module that was trained).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from engine.errors import InvalidRequestError
from engine.forward_batch import ForwardBatch
from engine.model_config import ModelConfig
from engine.models.hooks import FinishedOutput, ModelHooks, Rescored
from engine.models.line_encoder import HEIGHT, LineEncoder, frames_for_width, preprocess
from engine.models.llama import LlamaModel
from engine.sampler import token_logprobs

ARCHITECTURE = "HouseOcrForConditionalGeneration"
MERGE = 2


def image_token_count(frames: int) -> int:
    return -(-frames // MERGE)


@dataclasses.dataclass(frozen=True)
class RescoredLine:
    """`HouseOcrModel.rescore`'s answer: the two readings' scores (up to the term they share),
    and the decoder's log-probabilities at each token of the draft's continuation."""

    output: float
    draft: float
    draft_log_probs: torch.Tensor   # [len(draft) - j, vocab] float32: row i predicts draft[j + i]


class HouseOcrPreprocessor:
    """Crop -> encoder features; the same interface as multimodal.ImagePreprocessor."""

    merge_size = 1

    def __init__(self, encoder_threads: int = 1):
        self.encoder = LineEncoder(encoder_threads)

    def preprocess(self, image: Image.Image, label: str) -> tuple[torch.Tensor, tuple[int, int, int]]:
        """-> features [T, 120] float32 (the request's "pixel values"), grid (1, 1, image tokens)."""
        try:
            pixels = preprocess(np.asarray(image.convert("RGB")))
        except (ValueError, OSError, cv2.error) as exc:
            raise InvalidRequestError(f"{label} cannot be prepared for this model: {exc}", "images") from None
        assert pixels.shape[2] == HEIGHT
        features = torch.from_numpy(self.encoder.run(pixels))
        assert features.shape[0] == frames_for_width(pixels.shape[3]), (features.shape, pixels.shape)
        return features, (1, 1, image_token_count(features.shape[0]))


class HouseOcrModel(ModelHooks):
    is_multimodal = True

    def __init__(self, path: Path, config: ModelConfig, state: dict[str, torch.Tensor], dtype: torch.dtype,
                 max_positions: int, device: torch.device | str = "cpu", attention_backend: str = "torch"):
        assert config.architecture == ARCHITECTURE
        self.config = config
        self.dtype = dtype
        self.device = torch.device(device)

        def take(name: str) -> torch.Tensor:
            if name not in state:
                raise ValueError(f"the house OCR checkpoint at {path} has no tensor {name!r}")
            return state.pop(name).to(device=self.device, dtype=dtype).contiguous()

        self.projector = {n: take(f"projector.{n}") for n in
                          ("norm.weight", "norm.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")}
        self.ctc = {n: take(f"ctc_head.{n}") for n in
                    ("norm.weight", "norm.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")}
        self.language = LlamaModel(config, state, dtype, max_positions, device, attention_backend)
        extra = json.loads((path / "config.json").read_text()).get("house_ocr") or {}
        weight = extra.get("ctc_weight", 0.0)   # 0: plain greedy, no rescoring
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0.0 <= weight < 1.0:
            raise ValueError(f"house_ocr.ctc_weight in {path / 'config.json'} must be a number in [0, 1), "
                             f"got {weight!r}")
        self.ctc_weight = float(weight)

    @property
    def rescores_output(self) -> bool:
        return self.ctc_weight > 0.0

    def embed_tokens(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.language.embed[input_ids]

    @torch.inference_mode()
    def encode_image(self, features: torch.Tensor, grid_thw: tuple[int, int, int]) -> torch.Tensor:
        """Encoder features [T, 120] (from HouseOcrPreprocessor) -> image tokens [ceil(T/2), hidden]."""
        features = features.to(device=self.device, dtype=self.dtype)
        frames, dim = features.shape
        pad = (-frames) % MERGE
        if pad:
            features = torch.cat([features, features.new_zeros(pad, dim)])
        merged = features.reshape(-1, MERGE * dim)
        p = self.projector
        x = F.layer_norm(merged, (merged.shape[-1],), p["norm.weight"], p["norm.bias"], 1e-5)
        x = F.linear(F.gelu(F.linear(x, p["fc1.weight"], p["fc1.bias"])), p["fc2.weight"], p["fc2.bias"])
        assert x.shape[0] == grid_thw[2], (x.shape, grid_thw)
        return x

    def _ctc_logits(self, features: torch.Tensor) -> torch.Tensor:
        features = features.to(device=self.device, dtype=self.dtype)
        c = self.ctc
        x = F.layer_norm(features, (features.shape[-1],), c["norm.weight"], c["norm.bias"], 1e-5)
        return F.linear(F.gelu(F.linear(x, c["fc1.weight"], c["fc1.bias"])), c["fc2.weight"], c["fc2.bias"])

    @torch.inference_mode()
    def ctc_draft(self, features: torch.Tensor, blank_id: int = 0) -> list[int]:
        """Greedy CTC reading of a crop's features: token ids of the whole line, proposed at once."""
        tokens = self._ctc_logits(features).argmax(-1)
        # CTC collapse: keep a frame's token where it differs from the frame before and is not blank.
        changed = torch.ones_like(tokens, dtype=torch.bool)
        changed[1:] = tokens[1:] != tokens[:-1]
        return tokens[changed & (tokens != blank_id)].tolist()

    def draft_tokens(self, multimodal) -> list[int] | None:
        """The draft the engine verifies speculatively: the CTC reading of the request's one
        crop, then EOS (a line ends where the reading does)."""
        if len(multimodal.images) != 1:
            return None
        eos = list(self.config.eos_token_ids[:1])
        return self.ctc_draft(multimodal.images[0].pixel_values) + eos

    @torch.inference_mode()
    def rescore(self, prompt_ids: list[int], features: torch.Tensor, output_ids: list[int],
                output_log_probs: list[float], draft_ids: list[int], j: int,
                past: list[tuple[torch.Tensor, torch.Tensor]], blank_id: int = 0) -> RescoredLine:
        """Scores of a finished greedy line's output and of its draft (both ending in EOS), up to a
        term they share: w log P_ctc(y) + (1 - w) log P_dec(y[j:] | prompt, y[:j]), where j is the
        length of their common start. The output's decoder term is the sum of its tokens' log-probs
        as they were decoded (`output_log_probs`); the draft's continuation is run once over `past`,
        the K/V of the prompt and y[:j] but its last token (the finished request's pool rows), so
        a line that parts from its draft late costs little. That pass's log-probability rows come
        back too: a request that asks for logprobs and keeps its draft reports them."""
        assert output_ids[:j] == draft_ids[:j] and output_ids[j] != draft_ids[j], j
        before = len(prompt_ids) + j - 1
        assert len(output_log_probs) == len(output_ids), (len(output_log_probs), len(output_ids))
        assert past and past[0][0].shape[0] == before, (past[0][0].shape if past else None, before)
        last = output_ids[j - 1] if j else prompt_ids[-1]   # <|text|> or a text token: never an image token
        inputs = torch.tensor([last] + draft_ids[j:-1], device=self.device)
        log_probs = self.language.dense_logits(self.embed_tokens(inputs), past).log_softmax(-1)
        draft_decoder = float(log_probs.gather(1, torch.tensor(draft_ids[j:], device=self.device)[:, None]).sum())
        output_decoder = sum(output_log_probs[j:])
        ctc = self._ctc_logits(features).float().log_softmax(-1)
        w = self.ctc_weight
        return RescoredLine(output=w * self._ctc_log_prob(ctc, output_ids, blank_id) + (1.0 - w) * output_decoder,
                            draft=w * self._ctc_log_prob(ctc, draft_ids, blank_id) + (1.0 - w) * draft_decoder,
                            draft_log_probs=log_probs)

    def rescored_output(self, out: FinishedOutput, pool, eos_token_ids) -> Rescored | None:
        """The hook the engine calls when a rescored line stops (engine/models/hooks.py): where the
        greedy output differs from the draft, keep the draft if it scores higher (`rescore`), with
        its tokens' logprobs when the request asks for them. Runs before the request leaves the
        scheduler, while its K/V (the prompt and the output the two share) is still its own."""
        draft, output = out.draft_ids, out.output_ids
        eos_positions = [i for i, t in enumerate(draft) if t in eos_token_ids]
        if output == draft or eos_positions != [len(draft) - 1] or len(draft) > out.max_output_len:
            return None
        common = 0
        while output[common] == draft[common]:
            common += 1
        slots = out.kv_slots[:len(out.prompt_ids) + common - 1]
        past = [pool.gather(layer, slots) for layer in range(self.config.num_layers)]
        features = out.multimodal.images[0].pixel_values
        scores = self.rescore(out.prompt_ids, features, output, out.output_log_probs, draft, common, past)
        if not (scores.draft > scores.output or out.looped):
            return Rescored(kept_draft=False)
        logprobs = []
        if out.num_top_logprobs is not None:
            # The common start's as decoded (a rescored request's are all still pending), the rest
            # from the rows the draft was just scored with: one token a step would give the same.
            assert len(out.logprobs) == len(output), (len(out.logprobs), len(output))
            top_ks = [out.num_top_logprobs] * (len(draft) - common)
            logprobs = out.logprobs[:common] + token_logprobs(scores.draft_log_probs, draft[common:], top_ks)
        return Rescored(kept_draft=True, tokens=list(draft), logprobs=logprobs)

    def _ctc_log_prob(self, log_probs: torch.Tensor, y: list[int], blank_id: int) -> float:
        """log P_ctc(y | frames) of a reading (its EOS left out); -inf where the frames cannot spell it."""
        eos = set(self.config.eos_token_ids)
        labels = [t for t in y if t not in eos]
        if not labels:
            return float(log_probs[:, blank_id].sum())
        return -float(F.ctc_loss(log_probs[:, None], torch.tensor([labels]), torch.tensor([log_probs.shape[0]]),
                                 torch.tensor([len(labels)]), blank=blank_id, reduction="sum"))

    def forward(self, batch: ForwardBatch, pool) -> torch.Tensor:
        positions = batch.positions
        if positions.dim() == 2:   # the multimodal path's [3, N]: the width row is the 1-D position
            batch = dataclasses.replace(batch, positions=positions[2].contiguous())
        return self.language.forward(batch, pool)
