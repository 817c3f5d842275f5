"""Engine throughput on a GPU: SmolLM2-135M (the embedded text model) and tiny
random-weight GLM-OCR and Qwen2-VL models (with images) through our engine with
the Triton and the torch attention backends (and, for SmolLM2, the Triton
backend with decode steps replayed from CUDA graphs), and Hugging Face
`generate` on the same GPU, same dtype, same prompts. Prints a table and
writes JSON, with how many greedy tokens each backend shares with HF (bf16
arithmetic differs between implementations, so agreement is reported, not
assumed; HF's min_new_tokens also masks EOS where ours, with ignore_eos, may
pick it and go on).

    python bench/gpu_engine.py --out artifacts/gpu_check/gpu_engine.json
    python bench/gpu_engine.py --smoke --device cpu --dtype float32   # tiny run: checks the script
"""
from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

from engine.config import EngineConfig  # noqa: E402
from engine.engine import Engine  # noqa: E402
from engine.sampling_params import SamplingParams  # noqa: E402

# The same questions and chat prompts as the CPU throughput bench, so the figures compare.
from engine_throughput import QUESTIONS, chat_ids  # noqa: E402


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def ours(engine: Engine, prompts, new_tokens: int, device: str, one_at_a_time: bool):
    params = SamplingParams(temperature=0, max_tokens=new_tokens, ignore_eos=True)
    engine.generate([prompts[0]], SamplingParams(temperature=0, max_tokens=4))  # warm-up
    engine.flush_cache()
    sync(device)
    t = time.perf_counter()
    if one_at_a_time:
        outs = [engine.generate([p], params)[0] for p in prompts]
    else:
        outs = engine.generate(prompts, params)
    sync(device)
    dt = time.perf_counter() - t
    return sum(o.num_output_tokens for o in outs) / dt, [o.token_ids for o in outs]


def hf(model, prompts, new_tokens: int, pad_id: int, device: str, one_at_a_time: bool):
    def gen(batch):
        width = max(len(p) for p in batch)
        ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in batch], device=device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in batch], device=device)
        with torch.inference_mode():
            out = model.generate(ids, attention_mask=mask, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                 do_sample=False, pad_token_id=pad_id)
        return out[:, width:].tolist()

    gen([prompts[0]])  # warm-up
    sync(device)
    t = time.perf_counter()
    outs = [gen([p])[0] for p in prompts] if one_at_a_time else gen(prompts)
    sync(device)
    return sum(len(o) for o in outs) / (time.perf_counter() - t), outs


def agreement(a: list[list[int]], b: list[list[int]]) -> float:
    """Share of positions where two greedy runs agree, up to each pair's first difference."""
    same = total = 0
    for x, y in zip(a, b):
        n = next((i for i, (u, v) in enumerate(zip(x, y)) if u != v), min(len(x), len(y)))
        same, total = same + n, total + max(len(x), len(y))
    return same / max(total, 1)


def tiny_vlm_workload(family: str, backends: list[str], args, num_requests: int) -> dict:
    """A tiny random-weight VLM (tests/engine/tiny_vlm.py): requests with one image each, ours
    all at once vs HF generate one request at a time (HF batches images only by padding)."""
    import tempfile

    from tests.engine.tiny_vlm import build_tiny_vlm, png_bytes, random_image

    new_tokens = 8 if args.smoke else 32
    row: dict = {"requests": num_requests, "new_tokens": new_tokens}
    with tempfile.TemporaryDirectory() as tmp:
        vlm = build_tiny_vlm(family, Path(tmp))
        images = [random_image(90 + 14 * (i % 4), 60 + 28 * (i % 3), seed=i) for i in range(num_requests)]
        prompt = vlm.chat_prompt("Read the text.")
        params = SamplingParams(temperature=0, max_tokens=new_tokens, ignore_eos=True)
        outs = {}
        for backend in backends:
            engine = Engine(EngineConfig(model=str(vlm.path), device=args.device, dtype=args.dtype,
                                         attention_backend=backend, kv_tokens=65536))
            engine.generate([prompt], params, images=[[png_bytes(images[0])]])  # warm-up
            engine.flush_cache()
            sync(args.device)
            t = time.perf_counter()
            res = engine.generate([prompt] * num_requests, params, images=[[png_bytes(im)] for im in images])
            sync(args.device)
            row[f"ours_{backend}_tok_s"] = sum(o.num_output_tokens for o in res) / (time.perf_counter() - t)
            outs[backend] = [o.token_ids for o in res]
            del engine
            gc.collect()
        model = vlm.model.to(device=args.device, dtype=getattr(torch, args.dtype))
        ref = []
        sync(args.device)
        t = time.perf_counter()
        for im in images:
            inputs = {k: v.to(args.device) for k, v in vlm.hf_inputs(prompt, [im]).items()}
            if "pixel_values" in inputs:
                inputs["pixel_values"] = inputs["pixel_values"].to(getattr(torch, args.dtype))
            with torch.inference_mode():
                out = model.generate(**inputs, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
            ref.append(out[0, inputs["input_ids"].shape[1]:].tolist())
        sync(args.device)
        row["hf_tok_s"] = sum(len(r) for r in ref) / (time.perf_counter() - t)
        for backend in backends:
            row[f"ours_{backend}_vs_hf"] = row[f"ours_{backend}_tok_s"] / row["hf_tok_s"]
            row[f"greedy_agreement_{backend}_vs_hf"] = agreement(outs[backend], ref)
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="artifacts/gpu_check/gpu_engine.json")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    ap.add_argument("--smoke", action="store_true", help="a few short requests (any device)")
    args = ap.parse_args()
    backends = ["triton", "torch"] if args.device.startswith("cuda") else ["torch"]
    # name -> engine settings; "triton_graphs": decode steps replayed from CUDA graphs (text models)
    variants = {"triton": {"attention_backend": "triton"},
                "triton_graphs": {"attention_backend": "triton", "cuda_graph_max_batch": 128},
                "torch": {"attention_backend": "torch"}} if args.device.startswith("cuda") else \
        {"torch": {"attention_backend": "torch"}}
    n_b1, n_conc, new_b1, new_conc = (2, 4, 8, 8) if args.smoke else (4, 64, 64, 128)
    results: dict = {"device": torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device,
                     "dtype": args.dtype, "torch": torch.__version__, "model": "smollm2-135m", "workloads": {}}
    tokens: dict = {}
    tok = None
    for backend, settings in variants.items():
        engine = Engine(EngineConfig(model="smollm2-135m", device=args.device, dtype=args.dtype,
                                     **settings, context_length=2048, max_running_requests=128,
                                     max_prefill_tokens=4096, kv_tokens=None if args.device.startswith("cuda") else
                                     16384))
        tok = engine.tokenizer
        prompts = [chat_ids(tok, QUESTIONS[i % len(QUESTIONS)] + f" (variant {i})") for i in range(n_conc)]
        for name, ps, new, alone in (("batch1", prompts[:n_b1], new_b1, True),
                                     (f"concurrent{n_conc}", prompts, new_conc, False)):
            rate, outs = ours(engine, ps, new, args.device, alone)
            results["workloads"].setdefault(name, {})[f"ours_{backend}_tok_s"] = rate
            tokens[(name, backend)] = outs
        results[f"kv_pool_tokens_{backend}"] = engine.pool.num_slots - 1
        del engine
        gc.collect()  # the pool holds most of the GPU: free it before the next engine or HF loads
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()
    from transformers import AutoModelForCausalLM

    from engine.loader import resolve_model

    model = AutoModelForCausalLM.from_pretrained(str(resolve_model("smollm2-135m")),
                                                 dtype=getattr(torch, args.dtype)).to(args.device).eval()
    pad = tok.pad_token_id if tok.pad_token_id is not None else 2
    prompts = [chat_ids(tok, QUESTIONS[i % len(QUESTIONS)] + f" (variant {i})") for i in range(n_conc)]
    for name, ps, new, alone in (("batch1", prompts[:n_b1], new_b1, True),
                                 (f"concurrent{n_conc}", prompts, new_conc, False)):
        rate, outs = hf(model, ps, new, pad, args.device, alone)
        row = results["workloads"][name]
        row["hf_tok_s"] = rate
        for backend in variants:
            row[f"ours_{backend}_vs_hf"] = row[f"ours_{backend}_tok_s"] / rate
            row[f"greedy_agreement_{backend}_vs_hf"] = agreement(tokens[(name, backend)], outs)
    del model
    gc.collect()
    for family in ("glm_ocr", "qwen2_vl"):
        results["workloads"][f"tiny_{family}"] = tiny_vlm_workload(family, backends, args, n_b1 if args.smoke else 16)
    print(f"SmolLM2-135M and tiny VLMs on {results['device']}, {args.dtype}")
    for name, row in results["workloads"].items():
        print(name, " ".join(f"{k}={v:.3f}" for k, v in row.items()))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
