#!/usr/bin/env bash
# The GPU measurements in one run (docs/benchmarks.md): decoding on CUDA at the paper's dev/test
# size (bench_decode.py), BERT-base MLM / NPT training throughput (bench_gpu.py) and the NPT
# training loop against its bare step (bench_train.py, paper size). Results and
# logs go to $OUT (default bench-gpu-out/). Run from the repository root on a machine with a GPU;
# wheels in .whl/ (packages the machine lacks, e.g. lap) are installed into /tmp/site first.
set -uo pipefail
OUT="${OUT:-bench-gpu-out}"
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" | tee -a "$OUT/gpu.txt"
timeout "${DECODE_TIMEOUT:-150}" python3 bench/bench_decode.py --device cuda --repeats 5 \
    --json "$OUT/decode_cuda.json" 2>&1 | tee "$OUT/decode.log"
timeout "${TRAIN_TIMEOUT:-330}" python3 bench/bench_gpu.py --batches 8 32 64 --steps 8 \
    --json "$OUT/gpu.json" 2>&1 | tee "$OUT/gpu.log"
timeout "${LOOP_TIMEOUT:-120}" python3 bench/bench_train.py --devices cuda --sizes paper --steps 200 --warmup 20 \
    --json "$OUT/train_cuda.json" 2>&1 | tee "$OUT/train.log"
