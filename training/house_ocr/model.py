"""The house OCR model in plain PyTorch: what is trained, and the reference the
engine's served forward is tested against.

    frames [T, 120] (frozen PP-OCRv4 encoder)
      -> pairs of frames merged [ceil(T/2), 240] -> LayerNorm -> Linear -> GELU -> Linear   (projector)
      -> image tokens, replacing the `<|image|>` placeholders in
         <s> <|begin_of_image|> <|image|> x N <|end_of_image|> <|text|>
      -> a Llama decoder (transformers' LlamaForCausalLM, tied embeddings) -> characters, then </s>

The CTC head reads the unmerged frames and is the cheap draft: its greedy
collapse proposes the whole line at once.

Parameter names are Hugging Face Llama's (`model.layers.N...`, `lm_head`) plus
`projector.*` and `ctc_head.*`, so the engine loads the decoder with its own
Llama code.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from training.house_ocr import charset

FEATURE_DIM = 120
MERGE = 2


@dataclass
class HouseOCRConfig:
    hidden_size: int = 256
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    intermediate_size: int = 704
    max_position_embeddings: int = 1024
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    vocab_size: int = len(charset.VOCAB)
    feature_dim: int = FEATURE_DIM
    merge: int = MERGE

    def llama_config(self):
        from transformers import LlamaConfig

        return LlamaConfig(vocab_size=self.vocab_size, hidden_size=self.hidden_size,
                           intermediate_size=self.intermediate_size, num_hidden_layers=self.num_hidden_layers,
                           num_attention_heads=self.num_attention_heads,
                           num_key_value_heads=self.num_key_value_heads,
                           max_position_embeddings=self.max_position_embeddings, rope_theta=self.rope_theta,
                           rms_norm_eps=self.rms_norm_eps, tie_word_embeddings=True, hidden_act="silu",
                           bos_token_id=charset.BOS_ID, eos_token_id=charset.EOS_ID, pad_token_id=charset.PAD_ID,
                           attention_bias=False, mlp_bias=False)

    def to_dict(self) -> dict:
        return asdict(self)


def image_token_count(frames: int, merge: int = MERGE) -> int:
    return -(-frames // merge)


def merge_frames(features: torch.Tensor, merge: int = MERGE) -> torch.Tensor:
    """[T, C] -> [ceil(T/merge), merge*C], zero-padding the last group."""
    frames, dim = features.shape
    pad = (-frames) % merge
    if pad:
        features = torch.cat([features, features.new_zeros(pad, dim)])
    return features.reshape(-1, merge * dim)


def prompt_ids(num_image_tokens: int) -> list[int]:
    return ([charset.BOS_ID, charset.IMAGE_START_ID] + [charset.IMAGE_ID] * num_image_tokens
            + [charset.IMAGE_END_ID, charset.TASK_TEXT_ID])


class Projector(nn.Module):
    def __init__(self, in_dim: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(in_dim)
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(self.norm(x))))


class CTCHead(nn.Module):
    def __init__(self, in_dim: int, hidden: int, vocab: int):
        super().__init__()
        self.norm = nn.LayerNorm(in_dim)
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc2 = nn.Linear(hidden, vocab)   # index PAD_ID (0) is the CTC blank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(self.norm(x))))


class HouseOCR(nn.Module):
    def __init__(self, config: HouseOCRConfig):
        super().__init__()
        from transformers import LlamaForCausalLM

        self.config = config
        self.decoder = LlamaForCausalLM(config.llama_config())
        self.projector = Projector(config.feature_dim * config.merge, config.hidden_size)
        self.ctc_head = CTCHead(config.feature_dim, config.hidden_size, config.vocab_size)

    # --- batching -----------------------------------------------------------------------------------
    def embed(self, input_ids: torch.Tensor, image_embeds: list[torch.Tensor]) -> torch.Tensor:
        """Token embeddings with each row's `<|image|>` positions replaced by its image tokens."""
        embeds = self.decoder.model.embed_tokens(input_ids)
        mask = input_ids == charset.IMAGE_ID
        if image_embeds:
            embeds = embeds.masked_scatter(mask.unsqueeze(-1), torch.cat(image_embeds).to(embeds.dtype))
        return embeds

    def forward_logits(self, input_ids: torch.Tensor, image_embeds: list[torch.Tensor]) -> torch.Tensor:
        """Full-sequence logits [B, L, V]; rows are right-padded (causal attention keeps padding inert)."""
        hidden = self.decoder.model(inputs_embeds=self.embed(input_ids, image_embeds)).last_hidden_state
        return self.decoder.lm_head(hidden)

    # --- reference greedy decoding (no KV cache: recomputes the whole sequence each step) ------------
    @torch.no_grad()
    def greedy(self, features: torch.Tensor, max_new_tokens: int = 256) -> list[int]:
        image = self.projector(merge_frames(features, self.config.merge))
        ids = prompt_ids(image.shape[0])
        out: list[int] = []
        for _ in range(max_new_tokens):
            logits = self.forward_logits(torch.tensor([ids + out]), [image])[0, -1]
            token = int(logits.argmax())
            out.append(token)
            if token == charset.EOS_ID:
                break
        return out

    @torch.no_grad()
    def ctc_greedy(self, features: torch.Tensor) -> list[int]:
        best = self.ctc_head(features).argmax(-1).tolist()
        out, previous = [], charset.PAD_ID
        for token in best:
            if token != previous and token != charset.PAD_ID:
                out.append(token)
            previous = token
        return out
