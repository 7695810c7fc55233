#!/bin/bash
# The resident executor on the device machine (repo root, build/ carried;
# logs, CSV and SVG in $OUT/resident.tgz): its GPU tests, compute-sanitizer
# memcheck and racecheck over them (quick mode), `barecuda latency
# --resident --io` for the MLP policy and for a 128x2048x2048 GEMM, the
# example beside PyTorch with a CUDA graph, power idle without and with a
# resident executor, sharing within and across processes, and SASS facts.
# RUNS (default 10000) samples per latency series; CPU (default 3) the pinned
# core; SANITIZE=0 skips the sanitizers, SANITIZE=only runs just them (the
# two halves each fit a 10-minute device call); POWER=0 skips the power samples.
set -o pipefail
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
L=$(mktemp -d)
CPU=${CPU:-3}
RUNS=${RUNS:-10000}
summary() { grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$1" | tr '\n' ' '; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$L/gpu.txt" 2>&1; cat "$L/gpu.txt"

sanitize() { # memcheck and racecheck over the quick GPU tests, zero-copy included
  for tool in memcheck racecheck; do
    BC_TEST_QUICK=1 timeout 280 compute-sanitizer --tool $tool --num-cuda-barriers 4096 --error-exitcode 99 \
      build/bin/test_gpu_resident > "$L/san_${tool}.txt" 2>&1
    echo "compute-sanitizer --tool $tool test_gpu_resident rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/san_${tool}.txt" | tail -1) $(summary "$L/san_${tool}.txt")"
  done
}
if [ "${SANITIZE:-1}" = only ]; then
  sanitize
  tar czf "$OUT/resident_sanitize.tgz" -C "$L" .
  exit 0
fi

# ---- tests
timeout 300 build/bin/test_gpu_resident > "$L/gpu_resident.txt" 2>&1
echo "test_gpu_resident rc=$?: $(summary "$L/gpu_resident.txt")"
grep -E "executor:|identical|INFORMATIVE|FAIL|Failure|error" "$L/gpu_resident.txt" | sort | uniq -c | head -20
timeout 300 build/bin/test_gpu_resident_life > "$L/gpu_resident_life.txt" 2>&1
echo "test_gpu_resident_life rc=$?: $(summary "$L/gpu_resident_life.txt")"
grep -E "GEMM|stop took|close|INFORMATIVE|FAIL|Failure|error" "$L/gpu_resident_life.txt" | head -20
echo "compute processes left on the GPU after the exit test: $(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l)"
if [ "${SANITIZE:-1}" != 0 ]; then sanitize; fi

# ---- latency: the MLP policy and one 128x2048x2048 GEMM, stream / graph / resident, spin, pinned
for w in "mlp --mlp 16:256,1024,1024,64" "gemm --shape 128x2048x2048"; do
  set -- $w; name=$1; shift
  timeout 300 build/bin/barecuda latency "$@" --resident --io --wait spin --cpu "$CPU" --runs "$RUNS" \
    --csv "$L/lat_$name.csv" --svg "$L/lat_$name.svg" > "$L/lat_$name.txt" 2>&1
  echo "== barecuda latency $* --resident --io: rc=$?"; sed -n '1,3p;/^end to end/,$p' "$L/lat_$name.txt" | grep -vE "^$|floor|nothing"
  build/bin/barecuda latency "$@" --resident --wait spin --cpu "$CPU" --runs "$RUNS" --json > "$L/lat_$name.json" 2>&1
done

# ---- the example and its PyTorch CUDA-graph twin, timed the same way
for io in direct zerocopy memcpy; do
  timeout 120 build/bin/resident_policy --cpu "$CPU" --io $io > "$L/policy_$io.txt" 2>&1; echo "resident_policy --io $io rc=$?"
  cat "$L/policy_$io.txt"
done
timeout 300 python3 examples/resident_policy_torch.py --cpu "$CPU" --steps "$RUNS" 2>&1 | tee "$L/policy_torch.txt"

# ---- power: idle without an executor, then idle with one (backed off), then idle with one that never sleeps
power() { # label seconds: samples power.draw every 100 ms
  nvidia-smi --query-gpu=power.draw,clocks.sm,utilization.gpu --format=csv,noheader,nounits -lms 100 > "$L/power_$1.csv" 2>&1 &
  local pid=$!; sleep "$2"; kill $pid 2>/dev/null; wait $pid 2>/dev/null
  awk -F', *' -v l="$1" '{p+=$1; n++; if ($1>m) m=$1} END {printf "power %-24s %6.1f W mean, %6.1f W max over %d samples\n", l, p/n, m, n}' "$L/power_$1.csv"
}
if [ "${POWER:-1}" != 0 ]; then
  sleep 5; power idle-no-executor 10
  build/bin/resident_policy --steps 1000 --hold 13 > "$L/hold_backoff.txt" 2>&1 &
  hp=$!; sleep 3; power idle-resident-backoff 10; wait $hp
  # spin_ns 4 s (its largest): the kernel polls without sleeping for 4 s after its last step
  build/bin/resident_policy --steps 1000 --hold 5 --spin-ns 4000000000 > "$L/hold_spin.txt" 2>&1 &
  hp=$!; sleep 1.5; power idle-resident-spinning 3; wait $hp
  grep -h "SMs held" "$L/hold_backoff.txt" | head -1
fi

# ---- another process beside a resident executor: no MPS, so the contexts time-slice
build/bin/barecuda latency --shape 4096x4096x4096 --mode graph --wait spin --runs 200 > "$L/other_alone.txt" 2>&1
build/bin/resident_policy --steps 1000 --hold 20 > "$L/hold_other.txt" 2>&1 &
hp=$!; sleep 3
timeout 60 build/bin/barecuda latency --shape 4096x4096x4096 --mode graph --wait spin --runs 200 > "$L/other_beside.txt" 2>&1
echo "another process's 4096^3 GEMM (graph / spin p50, us): alone $(grep 'graph / spin ' "$L/other_alone.txt" | head -1 | awk '{print $4}'), beside an idle executor $(grep 'graph / spin ' "$L/other_beside.txt" | head -1 | awk '{print $4}')"
kill $hp 2>/dev/null; wait $hp 2>/dev/null

# ---- SASS: the launched kernels must not change; the resident kernels' instruction mix
# (BASE_CUBIN="paths": the same counts for another build's cubins, e.g. main's two sm_90a ones, to compare the launched kernels)
sass_counts() {
  cuobjdump -sass "$1" | awk '/Function : /{fn=$3} /HGMMA/{h[fn]++} /UTMALDG/{l[fn]++} /UTMASTG/{s[fn]++}
    /[^A-Z](LDL|STL)[. ]/{x[fn]++} /^ +\/\*[0-9a-f]+\*\//{n[fn]++}
    END {for (f in h) printf "  %-28s HGMMA %3d UTMALDG %2d UTMASTG %2d LDL/STL %d instructions %d\n", f, h[f], l[f], s[f], x[f], n[f]}' | sort
}
echo "SASS of this build (the sm_90a image and its optional groups):"
sass_counts_all() { for f in "$@"; do [ -f "$f" ] && sass_counts "$f"; done | sort; }
sass_counts_all build/kernels/sm90a.cubin build/kernels/sm90a_groups.cubin | tee "$L/sass_counts.txt"
[ -n "${BASE_CUBIN:-}" ] && { echo "SASS of $BASE_CUBIN:"; sass_counts_all $BASE_CUBIN | tee "$L/sass_counts_base.txt"; }
awk '/Function properties for/ {fn = $NF} /bytes stack frame/ {st = $0}
     /Used [0-9]+ registers/ && fn ~ /^bc_/ {sub(/.*Used/, "Used"); printf "  %-28s %s |%s\n", fn, $0, st; fn = ""}' \
  build/kernels/sm90a.cubin.ptxas.txt build/kernels/sm90a_groups.cubin.ptxas.txt
tar czf "$OUT/resident.tgz" -C "$L" .
