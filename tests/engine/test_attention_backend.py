"""The attention backends behind one contract: prepare once per step, forward
per layer (storing the new K/V into the pool, checked against slot owners in
debug mode). The torch and Triton backends agree on prefill, mixed
prefill+decode and pure decode steps over a pool with scattered slots; the
engine-level equalities are in test_engine_parity.py (torch backend vs Hugging
Face, bit for bit) and test_attention_backend_triton.py."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

if not torch.cuda.is_available():  # read when the kernel modules are first imported
    os.environ.setdefault("TRITON_INTERPRET", "1")

from engine.forward_batch import ForwardBatch  # noqa: E402
from engine.kv_pool import KVPool  # noqa: E402
from kernels.attention import make_attention_backend  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
HEADS, KV_HEADS, DIM = 4, 2, 16


def step(backend, pool, owners, slots, num_computed, new_lens, g):
    """One attention call for requests that have `num_computed` tokens and run `new_lens` more."""
    batch = ForwardBatch.build(
        token_ids=[[0] * n for n in new_lens], start_positions=num_computed,
        kv_slots=[s[: c + n] for s, c, n in zip(slots, num_computed, new_lens)],
        sample_rows=[True] * len(new_lens), owner_ids=owners)
    num_tokens = sum(new_lens)
    q = torch.randn(num_tokens, HEADS, DIM, generator=g).to(DEVICE)
    k = torch.randn(num_tokens, KV_HEADS, DIM, generator=g).to(DEVICE)
    v = torch.randn(num_tokens, KV_HEADS, DIM, generator=g).to(DEVICE)
    metadata = backend.prepare(batch)
    return backend.forward(q, k, v, 0, pool, metadata)


def run_steps(name: str) -> tuple[list[torch.Tensor], KVPool]:
    backend = make_attention_backend(name, DIM ** -0.5, DEVICE, KV_HEADS)
    pool = KVPool(1, 96, KV_HEADS, DIM, device=DEVICE, debug=True)
    pool.alloc(7, owner=9)  # a hole: the requests' slots do not start at 1
    owners = [1, 2, 3]
    slots = [pool.alloc(n, owner=o) for n, o in zip((30, 12, 25), owners)]
    g = torch.Generator().manual_seed(0)
    outs = [step(backend, pool, owners, slots, [0, 0, 0], [9, 1, 20], g),     # prefill (one one-token prompt)
            step(backend, pool, owners, slots, [9, 1, 20], [17, 1, 1], g),   # a chunk beside two decode rows
            step(backend, pool, owners, slots, [26, 2, 21], [1, 1, 1], g),   # decode only
            step(backend, pool, owners, slots, [27, 3, 22], [3, 1, 3], g)]   # verification of drafted tokens
    return outs, pool


def test_torch_and_triton_backends_agree():
    torch_outs, torch_pool = run_steps("torch")
    triton_outs, triton_pool = run_steps("triton")
    for a, b in zip(torch_outs, triton_outs):
        torch.testing.assert_close(b.cpu(), a.cpu(), atol=2e-5, rtol=1e-4)
    # both stored the same K/V in the same slots (and nothing was written elsewhere: NaN poison intact)
    assert torch.equal(torch_pool.k_cache.isnan(), triton_pool.k_cache.isnan())
    written = ~torch_pool.k_cache.isnan()
    assert torch.equal(torch_pool.k_cache[written], triton_pool.k_cache[written])
    assert torch.equal(torch_pool.v_cache[written], triton_pool.v_cache[written])


@pytest.mark.parametrize("name", ["torch", "triton"])
def test_debug_pool_refuses_a_write_to_another_owners_slot(name):
    backend = make_attention_backend(name, DIM ** -0.5, DEVICE, KV_HEADS)
    pool = KVPool(1, 32, KV_HEADS, DIM, device=DEVICE, debug=True)
    mine, theirs = pool.alloc(3, owner=1), pool.alloc(2, owner=2)
    batch = ForwardBatch.build([[0, 0]], [3], [torch.cat([mine, theirs])], [True], owner_ids=[1])
    q, kv = torch.zeros(2, HEADS, DIM, device=DEVICE), torch.zeros(2, KV_HEADS, DIM, device=DEVICE)
    with pytest.raises(AssertionError, match="owned by"):
        backend.forward(q, kv, kv, 0, pool, backend.prepare(batch))


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="torch"):
        make_attention_backend("flash", 1.0, "cpu")


def test_backends_never_import_the_engine():
    code = ("import sys, kernels.attention, kernels.attention.triton_backend; "
            "print(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "TRITON_INTERPRET": "1"})
    assert not {m.split(".")[0] for m in out.stdout.split()} & {"engine", "vision", "workers", "app"}


def test_config_names_devices_and_backends():
    from engine.config import EngineConfig
    from engine.model_runner import resolve_attention_backend, resolve_device

    for bad in ({"attention_backend": "flash"}, {"device": "tpu"}, {"kv_memory_fraction": 1.0}):
        with pytest.raises(ValueError):
            EngineConfig(model="m", **bad)
    assert resolve_attention_backend("auto", torch.device("cpu")) == "torch"
    assert resolve_attention_backend("auto", torch.device("cuda")) == "triton"
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_cuda_graph_buckets_cover_every_batch_size():
    from engine.cuda_graph import batch_sizes

    assert batch_sizes(1) == [1] and batch_sizes(4) == [1, 2, 4]
    assert batch_sizes(40) == [1, 2, 4, 8, 16, 32, 40]
    assert batch_sizes(128)[-3:] == [96, 112, 128]
