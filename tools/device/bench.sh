#!/bin/bash
# Benchmarks on the device machine (logs and CSV/SVG under $OUT):
# barecuda vs cuBLAS device time on the issue-5 shapes, then end-to-end
# latency (stream/graph x spin/yield/block) on the issue-6 shapes beside
# cuBLAS through PyTorch, then the boot timing.
set -o pipefail
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/gpu_state.txt" 2>&1
timeout 420 python3 tools/bench_compare.py --markdown 2>"$OUT/bench_err.txt" | tee "$OUT/bench.md"
echo "bench_compare rc=$?"
if [ "${LATENCY:-1}" = 1 ]; then
  for s in 128x2048x2048 64x1024x1024 256x4096x4096; do
    timeout 120 build/bin/barecuda latency --shape $s --runs ${RUNS:-10000} --mode all --wait all --cpu 3 \
      --csv "$OUT/lat_$s.csv" --svg "$OUT/lat_$s.svg" > "$OUT/lat_$s.txt" 2>&1
    echo "latency $s rc=$?"; cat "$OUT/lat_$s.txt" | tail -14
  done
  timeout 200 taskset -c 3 python3 tools/latency_cublas.py --runs ${RUNS:-10000} 2>&1 | tee "$OUT/lat_cublas.txt"
fi
for i in 1 2 3; do build/bin/barecuda boot > "$OUT/boot_$i.txt" 2>&1; done; cat "$OUT/boot_3.txt"
