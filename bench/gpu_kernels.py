"""Kernel microbenchmarks on a GPU: each Triton kernel against its torch
reference, and attention against torch's scaled_dot_product_attention on K/V
that are already contiguous (the bound a paged kernel cannot beat by much).
Prints a table and writes JSON; every row also carries the largest difference
from the reference, so a fast wrong kernel cannot hide.

    python bench/gpu_kernels.py --out artifacts/gpu_check/gpu_kernels.json
    TRITON_INTERPRET=1 python bench/gpu_kernels.py --smoke   # tiny shapes on CPU: checks the script runs
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def timer(device: torch.device, reps: int):
    """Median milliseconds of fn() (CUDA events on a GPU, wall clock under the interpreter)."""
    def run(fn) -> float:
        fn()  # warm-up (and compile)
        times = []
        for _ in range(reps):
            if device.type == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end))
            else:
                t = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t) * 1e3)
        return sorted(times)[len(times) // 2]
    return run


def pool_and_slots(num_kv_heads, head_dim, kv_lens, dtype, device, g):
    num_slots = sum(kv_lens) + 1
    k_cache = torch.randn(num_kv_heads, num_slots, head_dim, generator=g).to(device, dtype)
    v_cache = torch.randn(num_kv_heads, num_slots, head_dim, generator=g).to(device, dtype)
    perm = (torch.randperm(num_slots - 1, generator=g) + 1).to(device)  # scattered, as a busy pool is
    slots = list(perm.split(kv_lens))
    indptr = torch.tensor([0] + kv_lens, dtype=torch.int32).cumsum(0, dtype=torch.int32).to(device)
    return k_cache, v_cache, slots, indptr, perm.to(torch.int32)


def bench_decode(batch, kv_len, heads, kv_heads, head_dim, dtype, device, run, g):
    from kernels import paged_attention
    from kernels.decode_attention import choose_num_splits, decode_attention

    kv_lens = [kv_len] * batch
    k_cache, v_cache, slots, indptr, indices = pool_and_slots(kv_heads, head_dim, kv_lens, dtype, device, g)
    q = torch.randn(batch, heads, head_dim, generator=g).to(device, dtype)
    scale = head_dim ** -0.5
    splits = choose_num_splits(batch, kv_len, kv_heads)
    table = torch.stack(slots)
    mask = torch.ones(batch, 1, 1, kv_len, dtype=torch.bool, device=device)
    out = decode_attention(q, k_cache, v_cache, indptr, indices, scale, splits)
    ref = paged_attention.decode_attention(q, k_cache, v_cache, table, mask, scale)
    k = paged_attention.gather_kv(k_cache, table).transpose(0, 1)  # [batch, kv_heads, len, dim], contiguous-ish
    v = paged_attention.gather_kv(v_cache, table).transpose(0, 1).contiguous()
    k = k.contiguous()
    qs = q.unsqueeze(2)  # [batch, heads, 1, dim]
    return {
        "kernel": "decode_attention", "shape": f"b{batch} kv{kv_len} h{heads}/{kv_heads} d{head_dim}",
        "splits": splits, "max_abs_diff": float((out.float() - ref.float()).abs().max()),
        "triton_ms": run(lambda: decode_attention(q, k_cache, v_cache, indptr, indices, scale, splits)),
        "torch_ref_ms": run(lambda: paged_attention.decode_attention(q, k_cache, v_cache, table, mask, scale)),
        "sdpa_contiguous_ms": run(lambda: F.scaled_dot_product_attention(qs, k, v, scale=scale, enable_gqa=True)),
        "bytes_kv": 2 * batch * kv_len * kv_heads * head_dim * k_cache.element_size(),
    }


def bench_extend(batch, new, prefix, heads, kv_heads, head_dim, dtype, device, run, g):
    from kernels import paged_attention
    from kernels.extend_attention import extend_attention

    kv_lens = [new + prefix] * batch
    k_cache, v_cache, slots, kv_indptr, indices = pool_and_slots(kv_heads, head_dim, kv_lens, dtype, device, g)
    q = torch.randn(batch * new, heads, head_dim, generator=g).to(device, dtype)
    qo = torch.arange(0, (batch + 1) * new, new, dtype=torch.int32, device=device)
    scale = head_dim ** -0.5

    def reference():
        return torch.cat([paged_attention.extend_attention(q[i * new:(i + 1) * new], k_cache, v_cache, s.long(), scale)
                          for i, s in enumerate(slots)])

    out = extend_attention(q, k_cache, v_cache, qo, kv_indptr, indices, scale, new)
    row = {"kernel": "extend_attention", "shape": f"b{batch} new{new} prefix{prefix} h{heads}/{kv_heads} d{head_dim}",
           "max_abs_diff": float((out.float() - reference().float()).abs().max()),
           "triton_ms": run(lambda: extend_attention(q, k_cache, v_cache, qo, kv_indptr, indices, scale, new)),
           "torch_ref_ms": run(reference)}
    if prefix == 0:  # dense causal attention on contiguous K/V is the bound
        qd = q.view(batch, new, heads, head_dim).transpose(1, 2).contiguous()
        kd = torch.randn(batch, kv_heads, new, head_dim, generator=g).to(device, dtype)
        row["sdpa_contiguous_ms"] = run(lambda: F.scaled_dot_product_attention(qd, kd, kd, is_causal=True, scale=scale,
                                                                               enable_gqa=True))
    return row


def bench_elementwise(tokens, hidden, heads, head_dim, inter, vocab, dtype, device, run, g):
    from kernels.rms_norm import rms_norm, rms_norm_reference
    from kernels.rotary import apply_rotary_, apply_rotary_reference
    from kernels.silu_gate import silu_gate, silu_gate_reference
    from kernels.store_kv import store_kv, store_kv_reference
    from kernels.token_bitmask import apply_token_bitmask_, apply_token_bitmask_reference_

    rows = []
    x = torch.randn(tokens, hidden, generator=g).to(device, dtype)
    res = torch.randn(tokens, hidden, generator=g).to(device, dtype)
    w = torch.randn(hidden, generator=g).to(device, dtype)
    diff = (rms_norm(x, w, 1e-6, residual=res.clone()).float()
            - rms_norm_reference(x, w, 1e-6, residual=res.clone()).float()).abs().max()
    rows.append({"kernel": "rms_norm+residual", "shape": f"{tokens}x{hidden}", "max_abs_diff": float(diff),
                 "triton_ms": run(lambda: rms_norm(x, w, 1e-6, residual=res)),
                 "torch_ref_ms": run(lambda: rms_norm_reference(x, w, 1e-6, residual=res))})
    gu = torch.randn(tokens, 2 * inter, generator=g).to(device, dtype)
    rows.append({"kernel": "silu_gate", "shape": f"{tokens}x{inter}",
                 "max_abs_diff": float((silu_gate(gu).float() - silu_gate_reference(gu).float()).abs().max()),
                 "triton_ms": run(lambda: silu_gate(gu)), "torch_ref_ms": run(lambda: silu_gate_reference(gu))})
    qh = torch.randn(tokens, heads, head_dim, generator=g).to(device, dtype)
    pos = torch.randint(0, 4096, (3, tokens), generator=g).to(device)
    half = head_dim // 2
    cos = torch.randn(4096, half, generator=g).to(device, dtype)
    sin = torch.randn(4096, half, generator=g).to(device, dtype)
    sections = (half // 4, 3 * half // 8, half - half // 4 - 3 * half // 8)
    diff = (apply_rotary_(qh.clone(), pos, cos, sin, sections).float()
            - apply_rotary_reference(qh, pos, cos, sin, sections).float()).abs().max()
    rows.append({"kernel": "rotary (M-RoPE)", "shape": f"{tokens}x{heads}x{head_dim}", "max_abs_diff": float(diff),
                 "triton_ms": run(lambda: apply_rotary_(qh, pos, cos, sin, sections)),
                 "torch_ref_ms": run(lambda: apply_rotary_reference(qh, pos, cos, sin, sections))})
    kv_heads = max(1, heads // 4)
    k = torch.randn(tokens, kv_heads, head_dim, generator=g).to(device, dtype)
    cache = torch.zeros(kv_heads, 2 * tokens, head_dim, dtype=dtype, device=device)
    cache2 = torch.zeros_like(cache)
    slots = (torch.randperm(2 * tokens - 1, generator=g)[:tokens] + 1).to(device)
    rows.append({"kernel": "store_kv", "shape": f"{tokens}x{kv_heads}x{head_dim}", "max_abs_diff": 0.0,
                 "triton_ms": run(lambda: store_kv(k, k, cache, cache2, slots)),
                 "torch_ref_ms": run(lambda: store_kv_reference(k, k, cache, cache2, slots))})
    logits = torch.randn(min(tokens, 64), vocab, generator=g).to(device)
    mask = torch.randint(-2**31, 2**31 - 1, (logits.shape[0], (vocab + 31) // 32), generator=g,
                         dtype=torch.int64).to(torch.int32).to(device)
    rows.append({"kernel": "token_bitmask", "shape": f"{logits.shape[0]}x{vocab}", "max_abs_diff": 0.0,
                 "triton_ms": run(lambda: apply_token_bitmask_(logits, mask)),
                 "torch_ref_ms": run(lambda: apply_token_bitmask_reference_(logits, mask))})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="artifacts/gpu_check/gpu_kernels.json")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes, one repetition (CPU interpreter)")
    ap.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    args = ap.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type != "cuda" and not args.smoke:
        print("no CUDA device: run with --smoke under TRITON_INTERPRET=1 to check the script", file=sys.stderr)
        return 2
    dtype = getattr(torch, args.dtype) if device.type == "cuda" else torch.float32
    run = timer(device, 1 if args.smoke else 20)
    g = torch.Generator().manual_seed(0)
    rows = []
    if args.smoke:
        rows.append(bench_decode(2, 40, 4, 2, 64, dtype, device, run, g))
        rows.append(bench_extend(2, 8, 0, 4, 2, 64, dtype, device, run, g))
        rows.append(bench_extend(2, 8, 16, 4, 2, 64, dtype, device, run, g))
        rows += bench_elementwise(4, 64, 4, 64, 64, 100, dtype, device, run, g)
    else:
        for batch, kv_len in ((1, 4096), (1, 32768), (32, 1024), (32, 4096), (128, 2048)):
            rows.append(bench_decode(batch, kv_len, 32, 8, 128, dtype, device, run, g))   # Llama-3-8B-like heads
        rows.append(bench_decode(64, 2048, 16, 4, 128, dtype, device, run, g))            # GLM-OCR-like heads
        for batch, new, prefix in ((4, 1024, 0), (1, 4096, 0), (8, 256, 2048), (32, 8, 1024)):
            rows.append(bench_extend(batch, new, prefix, 32, 8, 128, dtype, device, run, g))
        rows += bench_elementwise(4096, 4096, 32, 128, 11008, 151936, dtype, device, run, g)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (interpreter smoke run)"
    print(f"{name}, {dtype}")
    print(f"{'kernel':18} {'shape':36} {'triton ms':>10} {'torch ms':>10} {'sdpa ms':>9} {'speedup':>8} "
          f"{'max diff':>9}")
    for r in rows:
        sdpa = f"{r['sdpa_contiguous_ms']:.3f}" if "sdpa_contiguous_ms" in r else ""
        r["speedup_vs_torch_ref"] = r["torch_ref_ms"] / r["triton_ms"]
        print(f"{r['kernel']:18} {r['shape']:36} {r['triton_ms']:10.3f} {r['torch_ref_ms']:10.3f} {sdpa:>9} "
              f"{r['speedup_vs_torch_ref']:7.2f}x {r['max_abs_diff']:9.2e}")
    result = {"device": name, "dtype": str(dtype), "torch": torch.__version__, "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
