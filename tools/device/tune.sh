#!/bin/bash
# Kernel-iteration pass on the device machine (repo root, build/ carried):
# the GPU GEMM tests, every configuration forced over the shape list (to
# calibrate the rule's weights), split-K on/off on the skinny shapes, the
# rule's choice beside cuBLAS, and latency of the issue-6 shapes. Logs go to
# $OUT/tune.tgz (one file: the device tool returns at most 8).
set -o pipefail
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
L=$(mktemp -d)
SHAPES=${SHAPES:-8192x8192x8192,4096x4096x4096,4096x4096x1024,2048x2048x2048,1024x1024x1024,512x4096x4096,256x4096x4096,128x2048x2048,64x1024x1024,16x4096x4096}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$L/gpu_state.txt" 2>&1
if [ "${TESTS:-1}" = 1 ]; then
  timeout 300 build/bin/test_gpu_gemm > "$L/gpu_gemm.txt" 2>&1; echo "test_gpu_gemm rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$L/gpu_gemm.txt" | tr '\n' ' ')"
  grep -E "FAIL|ERROR|Failure" "$L/gpu_gemm.txt" | head -10
fi
if [ "${CONFIGS:-1}" = 1 ]; then
  for cfg in ${CFGLIST:-sm90_128x256 sm90_128x128 sm90_128x64 sm90_64x32}; do
    timeout 120 build/bin/barecuda bench --config $cfg --split 1 --replays 10 --shapes "$SHAPES" > "$L/cfg_$cfg.txt" 2>&1
    echo "== $cfg (no split) rc=$?"; grep -E "^[0-9]+x" "$L/cfg_$cfg.txt" | awk '{if ($7 == "PASS") print "  " $1, "split " $5, $8 " us", $11 " TF"; else print "  " $0}'
  done
  if [ -n "${RULESHAPES:-}" ]; then
    timeout 60 build/bin/barecuda bench --replays 10 --shapes "$RULESHAPES" > "$L/rule.txt" 2>&1
    echo "== the rule's choice"; grep -E "^[0-9]+x" "$L/rule.txt"
  fi
fi
if [ "${COMPARE:-1}" = 1 ]; then
  timeout 300 python3 tools/bench_compare.py --markdown 2>"$L/bench_err.txt" | tee "$L/bench.md" | grep -E "^\| [0-9]|geometric"
fi
if [ "${LATENCY:-1}" = 1 ]; then
  for s in 128x2048x2048 64x1024x1024 256x4096x4096; do
    timeout 100 build/bin/barecuda latency --shape $s --runs ${RUNS:-5000} --mode all --wait ${WAIT:-all} --cpu 3 \
      --csv "$L/lat_$s.csv" --svg "$L/lat_$s.svg" > "$L/lat_$s.txt" 2>&1
    echo "== latency $s rc=$?"; sed -n '/^end to end/,$p' "$L/lat_$s.txt" | grep -E "/|bc_|raw" | head -16
  done
fi
tar czf "$OUT/tune.tgz" -C "$L" .
