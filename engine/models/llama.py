"""Llama-family decoder (Llama, Mistral, Qwen2, SmolLM2) over the paged KV pool.

Weights are plain tensors: q/k/v and gate/up are fused into one matmul each.
Only the rows that will be sampled go through the final norm and the LM head.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from engine.forward_batch import ForwardBatch
from engine.model_config import ModelConfig
from engine.models.hooks import ModelHooks
from engine.models.rope import RotaryEmbedding
from kernels.attention import make_attention_backend
from kernels.layer_ops import make_layer_ops


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    # Same operation order as the reference implementation, so fp32 results agree bit for bit.
    variance = x.pow(2).mean(-1, keepdim=True)
    return weight * (x * torch.rsqrt(variance + eps))


class LlamaLayer:
    def __init__(self, state: dict[str, torch.Tensor], prefix: str, dtype: torch.dtype, device: torch.device):
        def get(name: str) -> torch.Tensor | None:
            t = state.get(prefix + name)
            return None if t is None else t.to(device=device, dtype=dtype).contiguous()

        self.input_norm = get("input_layernorm.weight")
        self.post_norm = get("post_attention_layernorm.weight")
        self.w_qkv = torch.cat([get(f"self_attn.{p}_proj.weight") for p in "qkv"]).contiguous()
        biases = [get(f"self_attn.{p}_proj.bias") for p in "qkv"]
        self.b_qkv = torch.cat(biases).contiguous() if biases[0] is not None else None
        self.w_o = get("self_attn.o_proj.weight")
        self.b_o = get("self_attn.o_proj.bias")
        self.w_gate_up = torch.cat([get("mlp.gate_proj.weight"), get("mlp.up_proj.weight")]).contiguous()
        self.w_down = get("mlp.down_proj.weight")


class LlamaModel(ModelHooks):
    def __init__(self, config: ModelConfig, state: dict[str, torch.Tensor], dtype: torch.dtype, max_positions: int,
                 device: torch.device | str = "cpu", attention_backend: str = "torch"):
        self.config = config
        self.dtype = dtype
        self.device = device = torch.device(device)
        self.embed = state["model.embed_tokens.weight"].to(device=device, dtype=dtype).contiguous()
        head = state.get("lm_head.weight")
        tied = head is None or config.tie_word_embeddings
        self.lm_head = self.embed if tied else head.to(device=device, dtype=dtype).contiguous()  # [vocab, hidden]
        # The head is the largest matmul and the worst-shaped (tall and thin). Measured on CPU
        # (2 threads, vocab 49152): a few rows read a [hidden, vocab] copy fastest (a memory-bound
        # GEMV, 1.7x faster than F.linear); from 8 rows on, head @ h^T is 1.6-1.9x faster than either.
        self.lm_head_t = self.lm_head.t().contiguous() if self.device.type == "cpu" else None
        self.norm = state["model.norm.weight"].to(device=device, dtype=dtype)
        self.layers = [LlamaLayer(state, f"model.layers.{i}.", dtype, device) for i in range(config.num_layers)]
        self.rope = RotaryEmbedding(config.head_dim, config.rope_theta, config.rope_scaling, max_positions, dtype,
                                    device, fused=attention_backend == "triton")
        self.scale = config.head_dim ** -0.5
        c = config
        self.q_size, self.kv_size = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim
        self.attn = make_attention_backend(attention_backend, self.scale, device, c.num_kv_heads)
        self.ops = make_layer_ops(attention_backend)  # norms and the MLP gate: fused kernels with triton

    @torch.inference_mode()
    def forward(self, batch: ForwardBatch, pool) -> torch.Tensor:
        """Run the new tokens of `batch`, writing their K/V into `pool`; return
        logits [num_sampled, vocab] for batch.logits_indices."""
        c = self.config
        batch = batch.to(self.device)
        if batch.attn_metadata is None:  # (a CUDA-graph step brings its own, over static buffers)
            batch.attn_metadata = self.attn.prepare(batch)
        # h is the residual stream; a copy of given embeddings, since fused ops update it in place.
        h = self.embed[batch.input_ids] if batch.input_embeds is None else batch.input_embeds.to(self.dtype, copy=True)
        ops, eps, last = self.ops, c.rms_norm_eps, len(self.layers) - 1
        x = ops.rms_norm(h, self.layers[0].input_norm, eps)
        for i, layer in enumerate(self.layers):
            # h += attention; x = post_norm(h); h += mlp; x = next layer's input_norm(h)
            x, h = ops.add_rms_norm(self._attention(i, layer, x, batch, pool), h, layer.post_norm, eps)
            if i < last:
                x, h = ops.add_rms_norm(self._mlp(layer, x), h, self.layers[i + 1].input_norm, eps)
            else:
                h = h + self._mlp(layer, x)
        h = rms_norm(h[batch.logits_indices], self.norm, eps)
        return self.logits(h)

    def _mlp(self, layer: LlamaLayer, x: torch.Tensor) -> torch.Tensor:
        return F.linear(self.ops.silu_gate(F.linear(x, layer.w_gate_up)), layer.w_down)

    def _qkv(self, layer: LlamaLayer, x: torch.Tensor, positions: torch.Tensor):
        """Q and K [tokens, heads, head_dim] rotated to `positions`, and V."""
        c = self.config
        num_tokens = x.shape[0]
        q, k, v = F.linear(x, layer.w_qkv, layer.b_qkv).split([self.q_size, self.kv_size, self.kv_size], dim=-1)
        q = self.rope.apply(q.reshape(num_tokens, c.num_heads, c.head_dim), positions)
        k = self.rope.apply(k.reshape(num_tokens, c.num_kv_heads, c.head_dim), positions)
        return q, k, v.reshape(num_tokens, c.num_kv_heads, c.head_dim)

    @torch.inference_mode()
    def dense_logits(self, h: torch.Tensor,
                     past: list[tuple[torch.Tensor, torch.Tensor]] | None = None) -> torch.Tensor:
        """Logits [L, vocab] at every position of one sequence's new input embeddings [L, hidden],
        after `past` (per layer, K and V [P, kv_heads, head_dim] of positions 0..P-1, as the KV pool
        holds them: K rotated), with plain causal attention and nothing written anywhere: for
        scoring a few short continuations outside the batch (the house model's rescoring)."""
        c = self.config
        length = h.shape[0]
        before = 0 if past is None else past[0][0].shape[0]
        positions = torch.arange(before, before + length, device=h.device)
        # new token i sees every past position and new positions up to i
        mask = torch.ones(length, before + length, dtype=torch.bool, device=h.device).tril(before)
        group = c.num_heads // c.num_kv_heads
        h = h.to(self.dtype)
        for index, layer in enumerate(self.layers):
            q, k, v = self._qkv(layer, rms_norm(h, layer.input_norm, c.rms_norm_eps), positions)
            if past is not None:
                k, v = torch.cat([past[index][0].to(k.dtype), k]), torch.cat([past[index][1].to(v.dtype), v])
            out = F.scaled_dot_product_attention(
                q.transpose(0, 1), k.repeat_interleave(group, dim=1).transpose(0, 1),
                v.repeat_interleave(group, dim=1).transpose(0, 1), attn_mask=mask, scale=self.scale)
            h = h + F.linear(out.transpose(0, 1).reshape(length, self.q_size), layer.w_o, layer.b_o)
            h = h + self._mlp(layer, rms_norm(h, layer.post_norm, c.rms_norm_eps))
        return F.linear(rms_norm(h, self.norm, c.rms_norm_eps), self.lm_head).float()

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        if self.lm_head_t is None:
            return F.linear(h, self.lm_head).float()
        if h.shape[0] < 8:
            return torch.mm(h, self.lm_head_t).float()
        return torch.mm(self.lm_head, h.t()).t().contiguous().float()

    def _attention(self, index: int, layer: LlamaLayer, x: torch.Tensor, batch: ForwardBatch, pool) -> torch.Tensor:
        """Self-attention of layer `index` through the attention backend (which also stores the new K/V)."""
        q, k, v = self._qkv(layer, x, batch.positions)
        out = self.attn.forward(q, k, v, index, pool, batch.attn_metadata)  # [tokens, heads, head_dim]
        return F.linear(out.reshape(x.shape[0], self.q_size), layer.w_o, layer.b_o)
