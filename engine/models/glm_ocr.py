"""GLM-OCR (transformers model type `glm_ocr`): the GLM-V text decoder over the
paged KV pool, and transformers' GLM-OCR vision tower.

How the decoder differs from Llama (transformers' modeling_glm_ocr / glm4v):

| part      | GLM-OCR                                                               |
|-----------|-----------------------------------------------------------------------|
| layer     | four RMSNorms: input, post-self-attn (on the attention output, before |
|           | the residual add), post-attention (before the MLP), post-MLP (on the  |
|           | MLP output, before the residual add)                                  |
| MLP       | one fused gate_up_proj, chunked gate-first: down(up * silu(gate))     |
| attention | no q/k/v biases in GLM-OCR (GLM-4.1V has them; both load)             |
| rotary    | M-RoPE with neighbouring dims paired (2j, 2j+1), on the first         |
|           | head_dim * partial_rotary_factor dims only                            |

Multi-token prediction (MTP): a checkpoint with `num_nextn_predict_layers`
stores each MTP layer as decoder layer `num_hidden_layers + i`: a full GLM
layer plus enorm/hnorm, eh_proj and a shared_head (norm, sometimes its own
head). They draft tokens for speculative decoding (engine/spec/mtp.py) through
`mtp_forward`, as vLLM and SGLang run them (`method: mtp` / `NEXTN`): at position
p the layer reads the final-norm hidden state of the model (or, chained, of its
own previous step) at p and the embedding of the token at p + 1 (zero at position
0), writes its K/V to pool layer `num_hidden_layers + i` (the KV pool then holds
one more layer), and its head predicts the token at p + 2.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from engine.forward_batch import ForwardBatch
from engine.model_config import ModelConfig
from engine.models.llama import LlamaModel, rms_norm
from engine.models.rope import MRotaryEmbedding
from engine.models.vision_tower import VisionTower
from kernels.attention import make_attention_backend
from kernels.layer_ops import make_layer_ops


class GlmOcrLayer:
    # The q/k/v and output names match LlamaLayer's, so LlamaModel._attention runs this layer.
    def __init__(self, state: dict[str, torch.Tensor], prefix: str, dtype: torch.dtype, device: torch.device):
        def get(name: str) -> torch.Tensor | None:
            t = state.pop(prefix + name, None)
            return None if t is None else t.to(device=device, dtype=dtype).contiguous()

        self.input_norm = get("input_layernorm.weight")
        self.post_self_attn_norm = get("post_self_attn_layernorm.weight")
        self.post_attention_norm = get("post_attention_layernorm.weight")
        self.post_mlp_norm = get("post_mlp_layernorm.weight")
        self.w_qkv = torch.cat([get(f"self_attn.{p}_proj.weight") for p in "qkv"]).contiguous()
        biases = [get(f"self_attn.{p}_proj.bias") for p in "qkv"]
        self.b_qkv = torch.cat(biases).contiguous() if biases[0] is not None else None
        self.w_o = get("self_attn.o_proj.weight")
        self.b_o = get("self_attn.o_proj.bias")
        self.w_gate_up = get("mlp.gate_up_proj.weight")   # [2 * intermediate, hidden]: gate rows first
        self.w_down = get("mlp.down_proj.weight")


@dataclass
class GlmMtpLayer:
    """One multi-token-prediction layer: h' = block(eh_proj([enorm(embed(t)), hnorm(h)])),
    logits = head(shared_head_norm(h')); `head`/`embed` are None when shared with the model."""

    block: GlmOcrLayer
    enorm: torch.Tensor
    hnorm: torch.Tensor
    eh_proj: torch.Tensor            # [hidden, 2 * hidden]
    shared_head_norm: torch.Tensor
    head: torch.Tensor | None = None
    embed: torch.Tensor | None = None
    extra: dict[str, torch.Tensor] = field(default_factory=dict)  # anything else stored under the layer


class GlmOcrModel(LlamaModel):
    is_multimodal = True
    # `capture_hidden` (engine/models/hooks.py), set by the MTP drafter: `forward` then keeps the
    # final-norm hidden state of every row it ran in `captured_hidden` [num_tokens, hidden].
    captured_hidden: torch.Tensor | None = None

    def __init__(self, path: Path, config: ModelConfig, state: dict[str, torch.Tensor], dtype: torch.dtype,
                 max_positions: int, device: torch.device | str = "cpu", attention_backend: str = "torch"):
        # Not LlamaModel.__init__: the layers differ. The attributes _attention reads are set here.
        assert config.architecture == "GlmOcrForConditionalGeneration" and config.mrope_section
        self.config = c = config
        self.dtype = dtype
        self.device = device = torch.device(device)
        self.visual = VisionTower(path, config.architecture, state, dtype, device)
        self.embed = state.pop("model.embed_tokens.weight").to(device=device, dtype=dtype).contiguous()
        head = state.pop("lm_head.weight", None)
        tied = head is None or config.tie_word_embeddings
        self.lm_head = self.embed if tied else head.to(device=device, dtype=dtype).contiguous()
        self.norm = state.pop("model.norm.weight").to(device=device, dtype=dtype)
        self.layers = [GlmOcrLayer(state, f"model.layers.{i}.", dtype, device) for i in range(c.num_layers)]
        self.mtp_layers = [self._load_mtp_layer(state, f"model.layers.{c.num_layers + i}.", dtype, device)
                           for i in range(c.num_mtp_layers)]
        rotary_dim = int(c.head_dim * c.partial_rotary_factor)
        self.rope = MRotaryEmbedding(c.head_dim, rotary_dim, c.rope_theta, c.mrope_section, max_positions, dtype,
                                     interleaved=True, device=device, fused=attention_backend == "triton")
        self.scale = c.head_dim ** -0.5
        self.q_size, self.kv_size = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim
        self.attn = make_attention_backend(attention_backend, self.scale, device, c.num_kv_heads)
        self.ops = make_layer_ops(attention_backend)

    @staticmethod
    def _load_mtp_layer(state: dict[str, torch.Tensor], prefix: str, dtype: torch.dtype,
                        device: torch.device) -> GlmMtpLayer:
        if prefix + "eh_proj.weight" not in state:
            raise ValueError(f"the config declares MTP layers but the checkpoint has no {prefix}eh_proj.weight")
        block = GlmOcrLayer(state, prefix, dtype, device)
        rest = {k[len(prefix):]: state.pop(k).to(device=device, dtype=dtype)
                for k in [k for k in state if k.startswith(prefix)]}
        return GlmMtpLayer(block=block, enorm=rest.pop("enorm.weight"), hnorm=rest.pop("hnorm.weight"),
                           eh_proj=rest.pop("eh_proj.weight"), shared_head_norm=rest.pop("shared_head.norm.weight"),
                           head=rest.pop("shared_head.head.weight", None), embed=rest.pop("embed_tokens.weight", None),
                           extra=rest)

    def embed_tokens(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.embed[input_ids]  # [num_tokens, hidden]

    def encode_image(self, pixel_values: torch.Tensor, grid_thw: tuple[int, int, int]) -> torch.Tensor:
        return self.visual.encode(pixel_values, grid_thw)

    @torch.inference_mode()
    def forward(self, batch: ForwardBatch, pool) -> torch.Tensor:
        """Logits [num_sampled, vocab] for batch.logits_indices; K/V of the new tokens go to `pool`."""
        eps = self.config.rms_norm_eps
        batch = batch.to(self.device)
        if batch.attn_metadata is None:  # (a CUDA-graph step brings its own, over static buffers)
            batch.attn_metadata = self.attn.prepare(batch)
        h = self.embed[batch.input_ids] if batch.input_embeds is None else batch.input_embeds.to(self.dtype)
        for i, layer in enumerate(self.layers):
            h = self._layer(i, layer, h, batch, pool)
        if self.capture_hidden:
            self.captured_hidden = rms_norm(h, self.norm, eps)
        h = rms_norm(h[batch.logits_indices], self.norm, eps)
        return F.linear(h, self.lm_head).float()

    def _layer(self, index: int, layer: GlmOcrLayer, h: torch.Tensor, batch: ForwardBatch, pool) -> torch.Tensor:
        """One GLM decoder layer over the residual stream `h`; its K/V go to pool layer `index`."""
        eps, norm = self.config.rms_norm_eps, self.ops.rms_norm
        attn = self._attention(index, layer, norm(h, layer.input_norm, eps), batch, pool)
        h = h + norm(attn, layer.post_self_attn_norm, eps)
        gate_up = F.linear(norm(h, layer.post_attention_norm, eps), layer.w_gate_up)
        return h + norm(F.linear(self.ops.silu_gate(gate_up), layer.w_down), layer.post_mlp_norm, eps)

    @torch.inference_mode()
    def mtp_forward(self, batch: ForwardBatch, hidden: torch.Tensor, pool, first_rows: torch.Tensor,
                    step: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """One multi-token-prediction step over `batch`, whose input ids are the tokens that
        follow each row's position. hidden: [num_tokens, hidden], the model's final-norm hidden
        state at each row's position (or the previous step's output, chained); first_rows:
        [num_tokens] bool, rows at sequence position 0 (their token embedding is zeroed). The
        step-th chained step runs MTP layer step % num_mtp_layers. Returns the layer's output
        hidden states [num_tokens, hidden] (what a chained step reads) and the logits
        [len(batch.logits_indices), vocab] of the token after the next."""
        eps = self.config.rms_norm_eps
        index = step % len(self.mtp_layers)
        mtp = self.mtp_layers[index]
        batch = batch.to(self.device)
        batch.attn_metadata = self.attn.prepare(batch)
        embed = (self.embed if mtp.embed is None else mtp.embed)[batch.input_ids]
        embed = embed.masked_fill(first_rows.to(embed.device)[:, None], 0.0)
        x = torch.cat([rms_norm(embed, mtp.enorm, eps), rms_norm(hidden.to(self.dtype), mtp.hnorm, eps)], dim=-1)
        h = self._layer(self.config.num_layers + index, mtp.block, F.linear(x, mtp.eh_proj), batch, pool)
        head = self.lm_head if mtp.head is None else mtp.head
        logits = F.linear(rms_norm(h[batch.logits_indices], mtp.shared_head_norm, eps), head).float()
        return h, logits
