#!/bin/sh
# Fails when ptxas reports a stack frame or spills for a GEMM or resident kernel.
# usage: check_ptxas.sh PTXAS_V_REPORT
report=$1
awk '
/Function properties for/ { fn = $NF; next }
/bytes stack frame/ {
    if (fn ~ /^bc_(gemm|resident)_/ && ($1 != 0 || $5 != 0 || $9 != 0)) {
        printf "check_ptxas: %s: %s bytes stack, %s spill stores, %s spill loads\n", fn, $1, $5, $9
        bad = 1
    }
}
END { exit bad }
' "$report" || { echo "check_ptxas: GEMM kernels must not spill or use a stack frame (see $report)" >&2; exit 1; }
