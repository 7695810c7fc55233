#!/bin/bash
# Diagnosis run: tile maps of wrong outputs for a few shapes, plus SASS.
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
cuobjdump -sass build/kernels/sm90a.cubin > "$OUT/sm90a.sass" 2>&1
for s in "128 512 64 bf16" "128 512 64 f32" "256 256 64 bf16" "128 1024 128 f32" "512 512 512 bf16" "1000 1000 1000 bf16"; do
  set -- $s
  echo "== $*"
  timeout 60 build/bin/barecuda gemm --m $1 --n $2 --k $3 --out $4 --iters 1 --tile-report 2>&1 | head -20
done
