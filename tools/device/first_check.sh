#!/bin/bash
# First GPU check of the Hopper GEMM (run on the device machine from the repo
# root with build/ carried). Logs under $OUT.
set -o pipefail
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi -L 2>&1 | tee "$OUT/smi.txt"
cuobjdump -sass build/kernels/sm90a.cubin > "$OUT/sm90a.sass" 2>&1
echo "HGMMA: $(grep -c HGMMA "$OUT/sm90a.sass")  LDL/STL: $(grep -cE '\b(LDL|STL)\b' "$OUT/sm90a.sass")"
timeout 60 build/bin/barecuda gemm --m 128 --n 256 --k 64 --out f32 2>&1 | tee -a "$OUT/gemm.txt"
timeout 60 build/bin/barecuda gemm --m 7 --n 9 --k 16 2>&1 | tee -a "$OUT/gemm.txt"
timeout 120 build/bin/barecuda gemm --m 1000 --n 1000 --k 1000 2>&1 | tee -a "$OUT/gemm.txt"
timeout 200 build/bin/test_gpu_runtime 2>&1 | tee "$OUT/gpu_runtime.txt" | tail -15
timeout 400 build/bin/test_gpu_gemm 2>&1 | tee "$OUT/gpu_gemm.txt" | grep -vE '^\s+[0-9]+x' | tail -25
for s in "4096 4096 4096" "8192 8192 8192"; do
  set -- $s
  timeout 120 build/bin/barecuda gemm --m $1 --n $2 --k $3 --iters 30 2>&1 | tee -a "$OUT/gemm.txt"
done
timeout 200 python3 tools/bench_cublas.py 4096x4096x4096 8192x8192x8192 2>&1 | tee "$OUT/cublas.txt"
