#!/bin/bash
# Measures what the configuration rule's constants stand on (repo root on the
# device machine, build/ carried): every configuration x split over the
# shapes, each forced (--config/--split), device time per GEMM as in
# barecuda bench. Optionally the GPU tests first (TESTS=1) and other
# barecuda builds (VARIANTS="build/bin/barecuda_g4 ...") on BIG shapes.
# Prints "shape config split us TFLOP/s" rows; logs in $OUT/calib.tgz.
# PLAIN="" or SPLIT="" skips that group (unset takes the defaults).
set -o pipefail
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
L=$(mktemp -d)
SHAPES=${SHAPES-4096x4096x1024,2048x2048x2048,1024x1024x1024,512x4096x4096,256x4096x4096,128x2048x2048,64x1024x1024,16x4096x4096}
PLAIN=${PLAIN-sm90_128x256 sm90_128x128 sm90_128x64 sm90_64x32}
SPLIT=${SPLIT-sm90_128x256s sm90_128x128s}
row() { grep -E "^[0-9]+x" "$1" | awk -v tag="$2" '{if ($7 == "PASS") printf "  %-16s %-16s %-6s %9s us %7s TF\n", $1, $2, tag, $8, $11; else print "  " $0}'; }
if [ "${TESTS:-0}" = 1 ]; then
  timeout 300 build/bin/test_gpu_gemm > "$L/gpu_gemm.txt" 2>&1; echo "test_gpu_gemm rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$L/gpu_gemm.txt" | tr '\n' ' ')"
  grep -E "FAIL|ERROR|Failure" "$L/gpu_gemm.txt" | head -10
  BC_TEST_QUICK=1 timeout 200 build/bin/test_gpu_determinism > "$L/gpu_det.txt" 2>&1; echo "test_gpu_determinism (quick) rc=$?: $(grep -E 'identical|^\[  (PASSED|FAILED) ' "$L/gpu_det.txt" | tr '\n' ' ')"
fi
for cfg in $PLAIN; do
  timeout 100 build/bin/barecuda bench --config $cfg --split 1 --replays 10 --shapes "$SHAPES" > "$L/b_$cfg.txt" 2>&1
  row "$L/b_$cfg.txt" 1
done
for cfg in $SPLIT; do
  for s in 2 4 8; do
    timeout 100 build/bin/barecuda bench --config $cfg --split $s --replays 10 --shapes "$SHAPES" > "$L/b_${cfg}_$s.txt" 2>&1
    row "$L/b_${cfg}_$s.txt" $s
  done
done
for v in ${VARIANTS:-}; do
  timeout 150 $v bench --replays 10 --shapes "${BIG:-8192x8192x8192,6144x6144x6144,4096x4096x4096,4096x14336x4096}" > "$L/v_$(basename $v).txt" 2>&1
  echo "== $v"; row "$L/v_$(basename $v).txt" "$(basename $v)"
done
for spec in ${LAT:-}; do  # shape:config:split
  IFS=: read s c k <<< "$spec"
  timeout 60 build/bin/barecuda latency --shape $s --config $c --split $k --runs 3000 --mode graph --wait spin --cpu 3 > "$L/lat_${s}_${c}_$k.txt" 2>&1
  echo "== latency $spec: $(grep -E '^  graph / spin ' "$L/lat_${s}_${c}_$k.txt" | head -1)"
done
tar czf "$OUT/calib.tgz" -C "$L" .
