#!/bin/bash
# Benchmarks on the device machine (repo root, build/ carried; logs, CSV and
# SVG in $OUT/bench.tgz): barecuda vs cuBLAS device time on the benchmark
# shapes in one run, then end-to-end latency (stream/graph x spin/yield/block)
# on the latency shapes beside cuBLAS through PyTorch.
set -o pipefail
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
L=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$L/gpu_state.txt" 2>&1
if [ "${COMPARE:-1}" = 1 ]; then
  timeout 300 python3 tools/bench_compare.py --markdown --order ${ORDER:-ours-first} 2>"$L/bench_err.txt" | tee "$L/bench.md"
  echo "bench_compare rc=$?"
fi
if [ "${LATENCY:-1}" = 1 ]; then
  for s in 128x2048x2048 64x1024x1024 256x4096x4096; do
    timeout 150 build/bin/barecuda latency --shape $s --runs ${RUNS:-10000} --mode all --wait all --cpu 3 \
      --csv "$L/lat_$s.csv" --svg "$L/lat_$s.svg" > "$L/lat_$s.txt" 2>&1
    echo "== latency $s rc=$?"; sed -n '/^end to end/,$p' "$L/lat_$s.txt" | grep -E "/|bc_|raw" | head -16
  done
  timeout 200 taskset -c 3 python3 tools/latency_cublas.py --runs ${RUNS:-10000} 2>&1 | tee "$L/lat_cublas.txt"
fi
tar czf "$OUT/bench.tgz" -C "$L" .
