"""The house OCR model in plain PyTorch: what is trained, and the reference the
engine's served forward is tested against.

    frames [T, 120] (frozen PP-OCRv4 encoder)
      -> pairs of frames merged [ceil(T/2), 240] -> LayerNorm -> Linear -> GELU -> Linear   (projector)
      -> image tokens, replacing the `<|image|>` placeholders in
         <s> <|begin_of_image|> <|image|> x N <|end_of_image|> <|text|>
      -> a Llama decoder (transformers' LlamaForCausalLM, tied embeddings) -> characters, then </s>

The CTC head reads the unmerged frames and is the cheap draft: its greedy
collapse proposes the whole line at once.

Decoding (`decode`): the decoder's greedy reading, unless the CTC head's reading
scores higher under both heads together (hybrid CTC/attention rescoring, as
joint CTC/attention speech recognisers do): score(y) = w log P_ctc(y | frames)
+ (1 - w) log P_dec(y, </s> | image). An attention decoder can lose its place
in a long line and skip or repeat a stretch ("Public License" -> "Publicense");
CTC reads frame by frame and cannot, so a skip gets a very low CTC score, while
a CTC misreading gets a low decoder score. `CTC_WEIGHT` was chosen on held-out
validation lines (docs/BENCHMARKS.md).

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
CTC_WEIGHT = 0.3


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

    # --- reference decoding: the greedy reading or the CTC reading, whichever scores higher --------
    @torch.no_grad()
    def sequence_scores(self, features: torch.Tensor, candidates: list[list[int]],
                        ctc_weight: float = CTC_WEIGHT) -> list[float]:
        """w log P_ctc(y) + (1 - w) log P_dec(y) for each candidate output y (ending in </s>; the
        CTC term reads y without it)."""
        image = self.projector(merge_frames(features, self.config.merge))
        prompt = prompt_ids(image.shape[0])
        ctc_log_probs = self.ctc_head(features).log_softmax(-1)
        scores = []
        for y in candidates:
            log_probs = self.forward_logits(torch.tensor([prompt + y]), [image])[0].log_softmax(-1)
            decoder = float(log_probs[len(prompt) - 1:-1].gather(1, torch.tensor(y)[:, None]).sum())
            scores.append(ctc_weight * ctc_log_prob(ctc_log_probs, y) + (1.0 - ctc_weight) * decoder)
        return scores

    @torch.no_grad()
    def decode(self, features: torch.Tensor, max_new_tokens: int = 256, ctc_weight: float = CTC_WEIGHT) -> list[int]:
        """The model's reading of a line: greedy, or the CTC reading where it scores higher."""
        greedy = self.greedy(features, max_new_tokens)
        draft = self.ctc_greedy(features) + [charset.EOS_ID]
        if (ctc_weight <= 0 or greedy == draft or greedy[-1:] != [charset.EOS_ID] or len(draft) > max_new_tokens
                or charset.EOS_ID in draft[:-1]):   # a line that did not finish, or a draft that ends early
            return greedy
        mine, theirs = self.sequence_scores(features, [greedy, draft], ctc_weight)
        return draft if theirs > mine else greedy


def ctc_log_prob(log_probs: torch.Tensor, y: list[int], blank: int = charset.PAD_ID) -> float:
    """log P_ctc(y) for per-frame log-probabilities [T, V], y without </s> (-inf where the frames
    cannot spell it)."""
    labels = [t for t in y if t != charset.EOS_ID]
    if not labels:
        return float(log_probs[:, blank].sum())
    loss = F.ctc_loss(log_probs[:, None], torch.tensor([labels]), torch.tensor([log_probs.shape[0]]),
                      torch.tensor([len(labels)]), blank=blank, reduction="sum", zero_infinity=False)
    return -float(loss)
