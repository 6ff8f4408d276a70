#!/usr/bin/env bash
# One GPU: bench/gpu/paper_size.py at the paper's sizes, from the repository root,
# with the data prepared on the CPU (`python3 bench/gpu/paper_size.py prepare --results ... --wheels`,
# carried as bench/gpu/data). The script installs the wheels in bench/gpu/data/wheels itself and
# stops each part at its deadline (349 s planned); `timeout` is the last guard, under the 6 minutes.
# Output: $OUT/paper_size.tgz (and $OUT/paper_size/, $OUT/paper_size.log).
set -uo pipefail
OUT="${OUT:-paper-size-out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee "$OUT/gpu.txt"
timeout "${PAPER_SIZE_TIMEOUT:-358}" python3 bench/gpu/paper_size.py run --out "$OUT" "$@" 2>&1 | tee "$OUT/paper_size.log"
rc=${PIPESTATUS[0]}
# a timeout leaves no archive: keep what the log says in one
[ -f "$OUT/paper_size.tgz" ] || tar czf "$OUT/paper_size.tgz" -C "$OUT" paper_size.log gpu.txt
exit "$rc"
