#!/bin/sh
# Gives every kernel whose name starts with PREFIX its own register limit
# (a .maxnreg directive, which ptxas honours over -maxrregcount), so that one
# PTX file can hold kernels built for different limits. clang's C front end
# has no attribute for it.  usage: ptx_maxnreg.sh IN.ptx OUT.ptx PREFIX N
awk -v pre="$3" -v n="$4" '
index($0, ".visible .entry " pre) == 1 { pending = 1 }
pending && /^\{/ { print ".maxnreg " n; pending = 0 }
{ print }
' "$1" > "$2"
