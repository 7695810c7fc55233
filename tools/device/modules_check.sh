#!/bin/bash
# User modules on the GPU in one device call (repo root, build/ carried from
# .devcarry; logs in $OUT/modules.tgz): the module GPU tests (the nvcc
# fixture, a user kernel reading through a user tensor map, JIT only when
# asked, a graph of a GEMM and a user kernel, bad inputs), boot --module,
# the policy example beside the same network in PyTorch (CUDA graph, same
# timing, both pinned to CPU $CPU), and compute-sanitizer memcheck on the
# example and on the module tests.
set -o pipefail
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
CPU=${CPU:-2}
L=$(mktemp -d)
summary() { grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$1" | tr '\n' ' '; }
timeout 300 build/bin/test_gpu_module > "$L/gpu_module.txt" 2>&1
echo "test_gpu_module rc=$?: $(summary "$L/gpu_module.txt")"
grep -E "seed|fixture_saxpy:|tensor-map box|16-CTA|refused as it should|Failure|error" "$L/gpu_module.txt"
build/bin/barecuda boot --module tests/fixtures/user_kernels.fatbin --kernels fixture_saxpy,fixture_tma_box \
    --digest aa1322c8a27341fa > "$L/boot_module.txt" 2>&1
echo "barecuda boot --module rc=$?"; grep -E "user module|verdict" "$L/boot_module.txt"
build/bin/barecuda boot --module tests/fixtures/user_kernels.fatbin --digest 0 > "$L/boot_module_bad.txt" 2>&1
echo "barecuda boot --module (wrong digest) rc=$? (want 20)"
for i in 1 2; do
  timeout 300 build/bin/example_policy --cpu "$CPU" > "$L/example_$i.txt" 2>&1; echo "example_policy #$i rc=$?"
  cat "$L/example_$i.txt"
  timeout 300 python3 examples/policy/policy_torch.py --cpu "$CPU" > "$L/torch_$i.txt" 2>&1; echo "policy_torch #$i rc=$?"
  cat "$L/torch_$i.txt"
done
timeout 400 compute-sanitizer --tool memcheck --error-exitcode 99 build/bin/example_policy --runs 200 --warmup 5 \
    > "$L/san_memcheck_example.txt" 2>&1
echo "compute-sanitizer memcheck example_policy rc=$?: $(grep -E 'ERROR SUMMARY' "$L/san_memcheck_example.txt" | tail -1) $(grep verdict "$L/san_memcheck_example.txt")"
for tool in memcheck racecheck synccheck; do
  BC_TEST_QUICK=1 timeout 400 compute-sanitizer --tool $tool --num-cuda-barriers 4096 --error-exitcode 99 build/bin/test_gpu_module \
      > "$L/san_${tool}_gpu_module.txt" 2>&1
  echo "compute-sanitizer --tool $tool test_gpu_module rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/san_${tool}_gpu_module.txt" | tail -1) $(summary "$L/san_${tool}_gpu_module.txt")"
done
tar czf "$OUT/modules.tgz" -C "$L" .
