#!/bin/bash
# Everything that proves the Hopper claims, in one device call (logs in $OUT):
# info, boot, GPU tests, determinism under load, compute-sanitizer on the
# quick set, SASS facts. Benchmarks are tools/device/bench.sh.
set -o pipefail
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
run() { echo "== $*"; "$@"; echo "rc=$?"; }
run build/bin/barecuda info 2>&1 | tee "$OUT/info.txt"
for i in 1 2 3; do build/bin/barecuda boot 2>&1; done | tee "$OUT/boot.txt" | tail -24
build/bin/barecuda boot --json > "$OUT/boot.json" 2>&1
timeout 300 build/bin/test_gpu_runtime > "$OUT/gpu_runtime.txt" 2>&1; echo "test_gpu_runtime rc=$?: $(grep -E 'PASSED|FAILED' "$OUT/gpu_runtime.txt" | tr '\n' ' ')"
timeout 500 build/bin/test_gpu_gemm > "$OUT/gpu_gemm.txt" 2>&1; echo "test_gpu_gemm rc=$?: $(grep -E 'PASSED|FAILED' "$OUT/gpu_gemm.txt" | tr '\n' ' ')"
timeout 300 build/bin/test_gpu_determinism > "$OUT/gpu_determinism.txt" 2>&1; echo "test_gpu_determinism rc=$?: $(grep -E 'identical|PASSED|FAILED' "$OUT/gpu_determinism.txt" | tr '\n' ' ')"
if [ "${SANITIZE:-1}" = 1 ]; then
  for tool in memcheck racecheck synccheck; do
    for t in test_gpu_gemm test_gpu_runtime; do
      BC_TEST_QUICK=1 timeout 300 compute-sanitizer --tool $tool --error-exitcode 99 build/bin/$t > "$OUT/san_${tool}_$t.txt" 2>&1
      echo "compute-sanitizer --tool $tool $t rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_${tool}_$t.txt" | tail -1)"
    done
  done
fi
cuobjdump -sass build/kernels/sm90a.cubin > "$OUT/sm90a.sass" 2>&1
echo "SASS: HGMMA $(grep -c HGMMA "$OUT/sm90a.sass"), LDL/STL $(grep -cE '\b(LDL|STL)(\.|\s)' "$OUT/sm90a.sass"), UTMALDG $(grep -c UTMALDG "$OUT/sm90a.sass")"
