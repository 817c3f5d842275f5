"""The whole engine with the Triton attention backend (run by Triton's CPU
interpreter here, natively on a GPU) gives the same greedy tokens as the torch
backend on a tiny random-weight Llama: batched prompts of ragged lengths,
chunked prefill, prefix-cache hits and mixed prefill+decode steps."""
from __future__ import annotations

import os
import shutil

import pytest
import torch

if not torch.cuda.is_available():  # read when the kernel modules are first imported
    os.environ.setdefault("TRITON_INTERPRET", "1")

from engine.config import EngineConfig  # noqa: E402
from engine.engine import Engine  # noqa: E402
from engine.sampling_params import SamplingParams  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory, smollm2_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    path = tmp_path_factory.mktemp("tiny_llama")
    torch.manual_seed(0)
    # 4 query heads over 2 KV heads (GQA), head_dim 16.
    cfg = LlamaConfig(vocab_size=1024, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      eos_token_id=None, bos_token_id=None, pad_token_id=None, tie_word_embeddings=False)
    LlamaForCausalLM(cfg).eval().save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(smollm2_path / name, path / name)
    return path


def generate(path, backend: str, batches: list[list[list[int]]], max_new_tokens: int, **config) -> list:
    """Greedy outputs of each batch of prompts, run one batch after another on one engine."""
    eng = Engine(EngineConfig(model=str(path), kv_tokens=1024, device=DEVICE, attention_backend=backend,
                              debug=True, **config))
    assert eng.runner.attention_backend == backend
    params = SamplingParams(max_tokens=max_new_tokens, temperature=0.0, ignore_eos=True)
    return [out for prompts in batches for out in eng.generate(prompts, params)]


def tokens(outs) -> list[list[int]]:
    return [out.token_ids for out in outs]


def test_triton_backend_matches_torch_backend(tiny_llama):
    g = torch.Generator().manual_seed(1)
    shared = torch.randint(3, 1024, (20,), generator=g).tolist()
    first = [torch.randint(3, 1024, (n,), generator=g).tolist() for n in (1, 5, 23, 9)] + [shared + [7, 8]]
    # The second batch starts from the first's cached prefix (extend over a prefix of 20 tokens).
    batches = [first, [shared + [9], shared + [7, 8, 10, 11]]]
    # A small prefill budget: prompts run in chunks, and steps mix prefill chunks with decode rows.
    expected = generate(tiny_llama, "torch", batches, 6, max_prefill_tokens=16)
    got = generate(tiny_llama, "triton", batches, 6, max_prefill_tokens=16)
    assert got[-1].num_cached_tokens >= 20  # the second batch did start from the cache
    assert tokens(got) == tokens(expected)


def test_triton_backend_on_cpu_needs_the_interpreter(monkeypatch):
    from kernels.attention import make_attention_backend

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET"):
        make_attention_backend("triton", 0.25, "cpu")


def test_asking_for_cuda_without_one_is_an_error(tiny_llama):
    from engine.engine import EngineStartupError

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(EngineStartupError, match="no CUDA device"):
        Engine(EngineConfig(model=str(tiny_llama), kv_tokens=1024, device="cuda"))


@pytest.mark.parametrize("family", ["glm_ocr", "qwen2_vl"])
def test_vlm_with_images_on_the_triton_backend_matches_torch(family, tmp_path):
    """GLM-OCR's decoder calls the backend from its own forward; Qwen2-VL through the Llama one.
    Image tokens carry M-RoPE positions and run as one extend chunk with the text."""
    from tests.engine.tiny_vlm import build_tiny_vlm, png_bytes, random_image

    vlm = build_tiny_vlm(family, tmp_path)
    prompt = vlm.chat_prompt("Read the text.")
    images = [[png_bytes(random_image(90, 60, seed=1))], None]
    params = SamplingParams(max_tokens=5, temperature=0.0, ignore_eos=True)
    outs = {}
    for backend in ("torch", "triton"):
        eng = Engine(EngineConfig(model=str(vlm.path), kv_tokens=1024, device=DEVICE, attention_backend=backend,
                                  debug=True))
        outs[backend] = [o.token_ids for o in eng.generate([prompt, vlm.chat_prompt("Hello.", num_images=0)], params,
                                                           images=images)]
    assert outs["triton"] == outs["torch"]


def test_decode_steps_through_static_graph_buffers_match(tiny_llama, monkeypatch):
    """The CUDA-graph decode path (engine/cuda_graph.py): steps copied into static buffers and
    padded to a bucket size (3 requests run as 4: a padding row with no keys writing the pad
    slot). Here the same buffers run eagerly; on a GPU they are captured and replayed."""
    from engine.cuda_graph import DecodeGraphs

    runs = []
    original = DecodeGraphs.run
    monkeypatch.setattr(DecodeGraphs, "run", lambda self, batch: runs.append(batch.num_requests)
                        or original(self, batch))
    g = torch.Generator().manual_seed(2)
    batches = [[torch.randint(3, 1024, (n,), generator=g).tolist() for n in (4, 17, 9)],
               [torch.randint(3, 1024, (n,), generator=g).tolist() for n in (6, 2, 30, 8, 11)]]  # 5 > 4: eager
    expected = tokens(generate(tiny_llama, "torch", batches, 5))
    assert tokens(generate(tiny_llama, "triton", batches, 5, cuda_graph_max_batch=4)) == expected
    assert 3 in runs and all(n <= 4 for n in runs)
