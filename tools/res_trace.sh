#!/bin/sh
# Builds the resident executor's diagnostic variant: the library and CLI of
# the working tree compiled with -DBC_RES_TRACE, in build-trace/ (its own
# copy of the sources). Its resident kernels stamp %globaltimer and %clock64
# at fixed points of one step in eight (res_trace in
# kernels_ptx/resident_sm90.c: the events are listed there), and
# bc_resident_stop appends the stamps to $BC_RES_TRACE_FILE;
# tools/res_trace.py prints where a step's time goes. Never shipped: the
# normal build compiles every hook to nothing (its cubin is unchanged).
#   sh tools/res_trace.sh
#   BC_RES_TRACE_FILE=t.bin build-trace/build/bin/barecuda latency --resident --mlp 16:256,1024,1024,64
#   python3 tools/res_trace.py t.bin
set -e
out=build-trace
rm -rf "$out" && mkdir -p "$out"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$out"
sed -i -e 's|^cflags = |cflags = -DBC_RES_TRACE |' -e 's|^devflags = |devflags = -DBC_RES_TRACE |' "$out/build.ninja"
(cd "$out" && ninja build/bin/barecuda)
