#!/bin/bash
# The portable (mma.sync) family on the H100, through the sm_90a image's copy
# of the kernels, in one device call (repo root, build/ carried by
# tools/device/stage.sh; on the device `cp -r .devcarry/build .` first; logs
# in $OUT/portable.tgz): the GPU tests of every portable configuration, the
# determinism test (1000 runs per plan), compute-sanitizer memcheck /
# racecheck / synccheck over the quick set, SASS facts, then benchmarks with
# the family forced beside cuBLAS and beside the wgmma kernel's own choice.
#   PHASES="test sanitize bench" (default: all three)
set -o pipefail
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
L=$(mktemp -d)
PHASES=${PHASES:-test sanitize bench}
summary() { grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$1" | tr '\n' ' '; }
has() { case " $PHASES " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$L/gpu.txt" 2>&1; cat "$L/gpu.txt"
if has test; then
  build/bin/barecuda boot > "$L/boot.txt" 2>&1; echo "barecuda boot rc=$?"; tail -4 "$L/boot.txt"
  timeout 580 build/bin/test_gpu_gemm_portable > "$L/gpu_gemm_portable.txt" 2>&1
  echo "test_gpu_gemm_portable rc=$?: $(summary "$L/gpu_gemm_portable.txt")"
  grep -E "seed|FAIL|Failure|differs" "$L/gpu_gemm_portable.txt" | head -5
  grep -E "sm80_" "$L/gpu_gemm_portable.txt" | sort -t' ' -k13 -g | tail -3
  timeout 580 build/bin/test_gpu_determinism > "$L/gpu_determinism.txt" 2>&1
  echo "test_gpu_determinism rc=$?: $(summary "$L/gpu_determinism.txt")"
  grep -E "sm80_|identical" "$L/gpu_determinism.txt"
  cuobjdump -sass build/kernels/sm90a_groups.cubin > "$L/sm90a.sass" 2>&1
  for k in 128x256 128x128 64x64 64x32 32x32; do
    awk -v f="bc_gemm_sm80_$k" '/Function :/ { on = ($3 == f) } on' "$L/sm90a.sass" > "$L/sm80_$k.sass"
    echo "sm80_$k (sm_90a SASS): HMMA $(grep -c HMMA "$L/sm80_$k.sass"), LDSM $(grep -c LDSM "$L/sm80_$k.sass"), LDGSTS $(grep -c LDGSTS "$L/sm80_$k.sass"), LDL/STL $(grep -cE '\b(LDL|STL)(\.|\s)' "$L/sm80_$k.sass")"
  done
fi
if has sanitize; then
  for tool in memcheck racecheck synccheck; do
    BC_TEST_QUICK=1 timeout 580 compute-sanitizer --tool $tool --error-exitcode 99 build/bin/test_gpu_gemm_portable > "$L/san_$tool.txt" 2>&1
    echo "compute-sanitizer --tool $tool test_gpu_gemm_portable rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/san_$tool.txt" | tail -1) $(summary "$L/san_$tool.txt")"
  done
fi
if has bench; then
  for c in sm80_128x256 sm80_128x128; do
    timeout 200 python3 tools/bench_compare.py --markdown --config $c --shapes 4096x4096x4096,8192x8192x8192 2>>"$L/bench_err.txt" | tee "$L/bench_$c.md"
  done
  # small-M latency shapes: the portable family forced, and the wgmma rule, in one invocation each
  for c in sm80_32x32 sm80_64x32 sm80_64x64; do
    timeout 200 python3 tools/bench_compare.py --markdown --config $c --shapes 128x2048x2048,64x1024x1024,16x4096x4096 2>>"$L/bench_err.txt" | tee "$L/bench_$c.md"
  done
  timeout 120 build/bin/barecuda bench --shapes 128x2048x2048,64x1024x1024,16x4096x4096,4096x4096x4096 > "$L/bench_wgmma.txt" 2>&1
  echo "== wgmma rule (same shapes)"; cat "$L/bench_wgmma.txt"
fi
tar czf "$OUT/portable.tgz" -C "$L" .
