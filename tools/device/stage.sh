#!/bin/sh
# Copies what a device run needs (binaries, cmocka, cubins, the example's
# kernels fatbin) into .devcarry/,
# which the device tool carries; on the device: `cp -r .devcarry/build .`.
# BINS="barecuda test_gpu_gemm ..." copies only those programs of build/bin
# (libcmocka.so.0 always): every program together is over the 64 MiB a run
# carries, each one embedding the kernels.
set -eu
cd "$(dirname "$0")/../.."
rm -rf .devcarry && mkdir -p .devcarry/build/bin .devcarry/build/kernels
cp build/bin/libcmocka.so.0 .devcarry/build/bin/
if [ -n "${BINS:-}" ]; then
    for b in $BINS; do
        [ -x "build/bin/$b" ] || { echo "stage.sh: no program build/bin/$b" >&2; exit 1; }
        cp "build/bin/$b" .devcarry/build/bin/
    done
else
    cp build/bin/barecuda .devcarry/build/bin/
    for f in build/bin/test_gpu_* build/bin/bench_* build/bin/example_* build/bin/resident_policy; do
        [ -x "$f" ] && cp "$f" .devcarry/build/bin/
    done
fi
mkdir -p .devcarry/build/examples && cp build/examples/*.fatbin .devcarry/build/examples/
cp build/kernels/*.cubin build/kernels/*.ptxas.txt .devcarry/build/kernels/ 2>/dev/null || true
du -sh .devcarry
kib=$(du -sk .devcarry | cut -f1)
[ "$kib" -le 65536 ] || echo "stage.sh: .devcarry is ${kib} KiB, over the 64 MiB a run carries: name fewer programs in BINS" >&2
