#!/bin/bash
# Calibration data for the configuration rule (repo root on the device
# machine, build/ carried): for every seed in SEEDS, the same drawn sweep
# timed with every compiled-in sm_90a configuration forced (split 1 for the
# whole-tile ones, each of SPLITS for the split-K ones), as
#   barecuda bench --sweep COUNT --seed S --config C --split K --csv FILE
# Shapes a forced configuration cannot take are rows marked SKIP. Prints one
# line per run; the CSVs and logs go to $OUT/sweep_calib.tgz (calib/*.csv).
# Then, anywhere: tar xzf sweep_calib.tgz &&
#   python3 tools/fit_rule.py --fit-seeds 1,2 --check-seeds 3,4 calib/*.csv
# Knobs: SEEDS ("1 2"), COUNT (100), REPLAYS (10), SPLITS ("2 4 8"),
# MEMCAP (4294967296), FRAC (0.5), CONFIGS (default: all, from gemm_family_sm90.c),
# TIMEOUT per run in s (500).
set -o pipefail
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
SEEDS=${SEEDS:-"1 2"}
COUNT=${COUNT:-100}
REPLAYS=${REPLAYS:-10}
SPLITS=${SPLITS:-"2 4 8"}
MEMCAP=${MEMCAP:-4294967296}
FRAC=${FRAC:-0.5}
L=$(mktemp -d)
mkdir -p "$L/calib"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$L/calib/gpu_state.txt" 2>&1
# "name 0|1" per configuration (1: split-K), read from runtime/gemm_rule.c and gemm_family_sm90.c as the build compiled them
CONFIGS_LIST=$(python3 tools/fit_rule.py --list-configs) || { echo "sweep_calib: cannot list configurations"; exit 1; }
t0=$(date +%s)
for seed in $SEEDS; do
  while read -r name splits_k; do
    [ -n "$name" ] || continue
    if [ -n "${CONFIGS:-}" ] && ! echo " $CONFIGS " | grep -q " $name "; then continue; fi
    if [ "$splits_k" = 1 ]; then ks=$SPLITS; else ks=1; fi
    for k in $ks; do
      f="$L/calib/s${seed}_${name}_k${k}"
      s0=$(date +%s)
      timeout "${TIMEOUT:-500}" build/bin/barecuda bench --sweep "$COUNT" --seed "$seed" --mem-cap "$MEMCAP" \
        --epilogue-fraction "$FRAC" --config "$name" --split "$k" --replays "$REPLAYS" --csv "$f.csv" > "$f.txt" 2>&1
      rc=$?
      echo "seed $seed $name split $k: rc=$rc  PASS $(grep -c ' PASS ' "$f.txt")  SKIP $(grep -c ' SKIP ' "$f.txt")" \
           " FAIL $(grep -c ' FAIL ' "$f.txt")  $(( $(date +%s) - s0 )) s"
      [ $rc -eq 0 ] || tail -3 "$f.txt"
    done
  done <<< "$CONFIGS_LIST"
done
echo "sweep_calib: $(( $(date +%s) - t0 )) s in all"
tar czf "$OUT/sweep_calib.tgz" -C "$L" calib
