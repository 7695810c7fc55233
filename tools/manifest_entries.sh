#!/bin/sh
# Prints ptxas entry options (-e SYMBOL ...) for the kernels of
# kernels_ptx/manifest.h in the families named: how one PTX file becomes the
# sm_90a image (ALL SM90: what open resolves) and the sm_90a optional-groups
# cubin (SM80 RES90 SK90: resolved only when asked for).
# usage: manifest_entries.sh FAMILY...
manifest="$(dirname "$0")/../kernels_ptx/manifest.h"
families=""
for f in "$@"; do
    grep -q "^K([A-Z0-9_]*, [a-z0-9_]*, $f," "$manifest" || { echo "manifest_entries: no kernel of family $f in $manifest" >&2; exit 2; }
    families="$families${families:+\\|}$f"
done
[ -n "$families" ] || { echo "manifest_entries: no family named" >&2; exit 2; }
n=0
for sym in $(sed -n "s/^K([A-Z0-9_]*, \([a-z0-9_]*\), \($families\),.*/\1/p" "$manifest"); do
    printf -- '-e %s ' "$sym"
    n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "manifest_entries: no kernel in families $*" >&2; exit 1; }
