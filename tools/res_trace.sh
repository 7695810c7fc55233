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
# TRACE_FLAGS adds kernel flags: -DBC_RES_TRACE_TWICE runs a CTA's first
# whole GEMV item of each phase twice, stamping the second run (what the
# item costs with its code and operands cached); -DBC_RES_TRACE_FINE stamps
# a GEMV item's geometry and lane addresses worked out (res_trace.py --fine).
set -e
out=build-trace
rm -rf "$out" && mkdir -p "$out"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$out"
sed -i -e 's|^cflags = |cflags = -DBC_RES_TRACE |' -e "s|^devflags = |devflags = -DBC_RES_TRACE ${TRACE_FLAGS:+$TRACE_FLAGS }|" "$out/build.ninja"
# the stamps take registers: a diagnostic build may spill (reported, not refused)
sed -i 's| && sh tools/check_ptxas.sh $out.ptxas.txt||' "$out/build.ninja"
(cd "$out" && ninja build/bin/barecuda)
awk '/Function properties for/ { f = $NF } /spill stores/ { print "res_trace: " f ": " $0 }' \
    "$out"/build/kernels/sm90a_groups.cubin.ptxas.txt
