#!/bin/sh
# Copies what a device run needs (binaries, cmocka, cubins, the example's
# kernels fatbin) into .devcarry/,
# which the device tool carries; on the device: `cp -r .devcarry/build .`.
set -eu
cd "$(dirname "$0")/../.."
rm -rf .devcarry && mkdir -p .devcarry/build/bin .devcarry/build/kernels
cp build/bin/barecuda build/bin/libcmocka.so.0 .devcarry/build/bin/
for f in build/bin/test_gpu_* build/bin/bench_* build/bin/example_* build/bin/resident_policy; do [ -x "$f" ] && cp "$f" .devcarry/build/bin/; done
mkdir -p .devcarry/build/examples && cp build/examples/*.fatbin .devcarry/build/examples/
cp build/kernels/*.cubin build/kernels/*.ptxas.txt .devcarry/build/kernels/ 2>/dev/null || true
du -sh .devcarry
