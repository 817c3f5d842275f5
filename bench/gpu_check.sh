#!/usr/bin/env bash
# The GPU check: one call on a machine with an NVIDIA GPU, about 10 minutes.
#   1. the kernel tests natively on the GPU (and the engine with the Triton backend vs torch),
#   2. kernel microbenchmarks against the torch references and SDPA,
#   3. engine throughput for SmolLM2-135M (Triton and torch backends) against HF generate.
# Everything lands in $OUT_DIR (default artifacts/gpu_check/): one JSON per part and summary.json.
#
#   bash bench/gpu_check.sh                 # from the repository root, with .venv holding a CUDA torch
#   PYTHON=python3 OUT_DIR=/tmp/gc bash bench/gpu_check.sh
#
# A part that fails is recorded as failed and the next part still runs; the exit status is
# non-zero if any part failed.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=${OUT_DIR:-artifacts/gpu_check}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
unset TRITON_INTERPRET  # natively, on the GPU

status=0
part() {  # part NAME SECONDS CMD...: run with a time limit, note rc and seconds
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    echo "== $name (limit ${limit}s)"
    timeout "$limit" "$@" 2>&1 | tee "$OUT/$name.log"
    local rc=${PIPESTATUS[0]}
    echo "{\"part\": \"$name\", \"rc\": $rc, \"seconds\": $((SECONDS - t0))}" > "$OUT/$name.status.json"
    [ "$rc" -eq 0 ] || status=1
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1 || true
if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "torch sees no CUDA device: nothing to check here" | tee "$OUT/error.txt"
    exit 2
fi

part kernel_tests 240 "$PY" -m pytest -q -p no:cacheprovider tests/kernels tests/engine/test_attention_backend.py \
    tests/engine/test_attention_backend_triton.py \
    --junitxml="$OUT/kernel_tests.xml"
part gpu_kernels 150 "$PY" bench/gpu_kernels.py --out "$OUT/gpu_kernels.json"
part gpu_engine 240 "$PY" bench/gpu_engine.py --out "$OUT/gpu_engine.json"

"$PY" - "$OUT" <<'PYEOF'
import json, sys, datetime, pathlib
out = pathlib.Path(sys.argv[1])
summary = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "gpu": (out / "gpu.txt").read_text().strip() if (out / "gpu.txt").exists() else None,
           "parts": [json.loads(p.read_text()) for p in sorted(out.glob("*.status.json"))]}
for name in ("gpu_kernels", "gpu_engine"):
    path = out / f"{name}.json"
    summary[name] = json.loads(path.read_text()) if path.exists() else None
(out / "summary.json").write_text(json.dumps(summary, indent=2))
print(json.dumps(summary["parts"]))
PYEOF
exit $status
