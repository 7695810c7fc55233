#!/bin/bash
# GPU correctness pass: CLI spot checks, the GPU test binaries, and the
# compute-sanitizer tools on the quick test set. Logs under $OUT.
set -o pipefail
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
for s in "1 1 8" "7 9 16" "1000 1000 1000" "4096 4096 4096"; do
  set -- $s
  timeout 120 build/bin/barecuda gemm --m $1 --n $2 --k $3 --iters 20 2>&1 | tee -a "$OUT/gemm.txt"
done
timeout 200 build/bin/test_gpu_runtime > "$OUT/gpu_runtime.txt" 2>&1; echo "test_gpu_runtime rc=$?"; tail -3 "$OUT/gpu_runtime.txt"
timeout 400 build/bin/test_gpu_gemm > "$OUT/gpu_gemm.txt" 2>&1; echo "test_gpu_gemm rc=$?"; grep -E "FAIL|ERROR|PASSED|seed" "$OUT/gpu_gemm.txt" | head -20
if [ "${SANITIZE:-1}" = 1 ]; then
  for tool in memcheck racecheck synccheck; do
    BC_TEST_QUICK=1 timeout 300 compute-sanitizer --tool $tool --error-exitcode 99 build/bin/test_gpu_gemm > "$OUT/san_$tool.txt" 2>&1
    echo "compute-sanitizer $tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_$tool.txt" | tail -1)"
  done
fi
