#!/bin/sh
# Fails when the PTX lacks a kernel that kernels_ptx/manifest.h requires for
# one of this image's families.  usage: check_manifest.sh FILE.ptx FAMILY...
ptx=$1
shift
families="ALL"
for f in "$@"; do families="$families\\|$f"; done
missing=0
for sym in $(sed -n "s/^K([A-Z0-9_]*, \([a-z0-9_]*\), \($families\),.*/\1/p" kernels_ptx/manifest.h); do
    if ! grep -q "^\.visible \.entry $sym(" "$ptx"; then
        echo "check_manifest: $ptx lacks kernel $sym (families ALL $*)" >&2
        missing=1
    fi
done
exit $missing
