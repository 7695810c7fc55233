#!/bin/bash
# barecuda vs cuBLAS on drawn shape sweeps (repo root on the device machine,
# build/ carried): for every seed in SEEDS,
#   python3 tools/bench_compare.py --sweep COUNT --seed S --markdown --csv FILE
# (both sides time the same shapes and epilogues the same way in one
# invocation); with LISTED=1 the listed-shape comparison too, in the same run.
# Tables and CSVs in $OUT/sweep.tgz. Knobs: SEEDS ("101 102"), COUNT (200),
# MEMCAP (4294967296), FRAC (0.5), ORDER (ours-first), TIMEOUT per seed (560).
set -o pipefail
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
L=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$L/gpu_state.txt" 2>&1
if [ "${LISTED:-0}" = 1 ]; then
  timeout 300 python3 tools/bench_compare.py --markdown --order "${ORDER:-ours-first}" --csv "$L/listed.csv" \
    2> "$L/listed_err.txt" | tee "$L/listed.md"
  echo "listed rc=$?"
fi
for seed in ${SEEDS:-101 102}; do
  s0=$(date +%s)
  timeout "${TIMEOUT:-560}" python3 tools/bench_compare.py --sweep "${COUNT:-200}" --seed "$seed" \
    --mem-cap "${MEMCAP:-4294967296}" --epilogue-fraction "${FRAC:-0.5}" --order "${ORDER:-ours-first}" --markdown \
    --csv "$L/sweep_$seed.csv" 2> "$L/sweep_${seed}_err.txt" > "$L/sweep_$seed.md"
  rc=$?
  echo "== seed $seed: rc=$rc, $(( $(date +%s) - s0 )) s"
  sed -n '/^ratio (cuBLAS/,$p' "$L/sweep_$seed.md"
  [ $rc -eq 0 ] || tail -5 "$L/sweep_${seed}_err.txt"
done
tar czf "$OUT/sweep.tgz" -C "$L" .
