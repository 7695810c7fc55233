#!/bin/bash
# Everything that proves the Hopper correctness claims, in one device call
# (repo root, build/ carried; logs in $OUT/check.tgz): info, boot (x3 and
# --json), the GPU test binaries, the 1000-run determinism test, SASS facts.
# SANITIZE=1 adds compute-sanitizer memcheck/racecheck/synccheck over the
# quick test set (BC_TEST_QUICK=1); SANITIZE=only runs just those.
set -o pipefail
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
L=$(mktemp -d)
summary() { grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$1" | tr '\n' ' '; }
if [ "${SANITIZE:-0}" != only ]; then
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$L/gpu.txt" 2>&1; cat "$L/gpu.txt"
  build/bin/barecuda info > "$L/info.txt" 2>&1; echo "barecuda info rc=$?"
  for i in 1 2 3; do build/bin/barecuda boot > "$L/boot_$i.txt" 2>&1; echo "barecuda boot #$i rc=$?"; done
  build/bin/barecuda boot --json > "$L/boot.json" 2>&1
  tail -8 "$L/boot_3.txt"
  timeout 200 build/bin/test_gpu_runtime > "$L/gpu_runtime.txt" 2>&1; echo "test_gpu_runtime rc=$?: $(summary "$L/gpu_runtime.txt")"
  timeout 400 build/bin/test_gpu_gemm > "$L/gpu_gemm.txt" 2>&1; echo "test_gpu_gemm rc=$?: $(summary "$L/gpu_gemm.txt")"
  timeout 300 build/bin/test_gpu_gemm_twins > "$L/gpu_gemm_twins.txt" 2>&1; echo "test_gpu_gemm_twins rc=$?: $(summary "$L/gpu_gemm_twins.txt")"
  timeout 300 build/bin/test_gpu_gemm_epilogue > "$L/gpu_gemm_epilogue.txt" 2>&1; echo "test_gpu_gemm_epilogue rc=$?: $(summary "$L/gpu_gemm_epilogue.txt")"
  grep -E "seed|FAIL|Failure" "$L/gpu_gemm.txt" | head -5
  timeout 400 build/bin/test_gpu_determinism > "$L/gpu_determinism.txt" 2>&1; echo "test_gpu_determinism rc=$?: $(summary "$L/gpu_determinism.txt")"
  # faults and hangs (each scenario in a child process: its table is the README's recovery table)
  timeout 500 build/bin/test_gpu_faults > "$L/gpu_faults.txt" 2>&1; echo "test_gpu_faults rc=$?: $(summary "$L/gpu_faults.txt")"
  grep -E '^  [a-z_]+ +\|' "$L/gpu_faults.txt"
  timeout 200 build/bin/test_gpu_operands > "$L/gpu_operands.txt" 2>&1; echo "test_gpu_operands rc=$?: $(summary "$L/gpu_operands.txt")"
  grep -E 'check cost|->' "$L/gpu_operands.txt"
  grep -E "split_k|identical" "$L/gpu_determinism.txt"
  for c in sm90a sm90a_groups sm90a_sk sm100a; do cuobjdump -sass build/kernels/$c.cubin > "$L/$c.sass" 2>&1; done
  cat "$L/sm90a_groups.sass" "$L/sm90a_sk.sass" >> "$L/sm90a.sass" # the image and its optional cubins together
  echo "sm90a SASS (image and optional groups): HGMMA $(grep -c HGMMA "$L/sm90a.sass"), UTMALDG $(grep -c UTMALDG "$L/sm90a.sass"), UTMASTG $(grep -c UTMASTG "$L/sm90a.sass"), LDL/STL $(grep -cE '\b(LDL|STL)(\.|\s)' "$L/sm90a.sass")"
  echo "sm100a SASS: $(grep -oE '\b(UTC[A-Z0-9]+|LDTM|STTM)\b' "$L/sm100a.sass" | sort | uniq -c | tr '\n' ' ') LDL/STL $(grep -cE '\b(LDL|STL)(\.|\s)' "$L/sm100a.sass")"
fi
if [ "${SANITIZE:-0}" != 0 ]; then
  # synccheck tracks too few mbarriers by default for these kernels (it overflows and aborts them
  # at 64 or 512; 4096 works)
  for tool in ${TOOLS:-memcheck racecheck synccheck}; do
    for t in test_gpu_gemm test_gpu_gemm_twins test_gpu_gemm_epilogue test_gpu_runtime test_gpu_operands; do
      BC_TEST_QUICK=1 timeout 400 compute-sanitizer --tool $tool --num-cuda-barriers 4096 --error-exitcode 99 build/bin/$t > "$L/san_${tool}_$t.txt" 2>&1
      echo "compute-sanitizer --tool $tool $t rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/san_${tool}_$t.txt" | tail -1) $(summary "$L/san_${tool}_$t.txt")"
    done
  done
fi
tar czf "$OUT/check.tgz" -C "$L" .
