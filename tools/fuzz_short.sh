#!/bin/sh
# Bounded fuzzing of the fatbin parser + selector for CI.
# usage: tools/fuzz_short.sh SECONDS
# Builds build/bin/fuzz_fatbin, fuzzes for SECONDS starting from the committed
# corpus (tests/fuzz/corpus, left unchanged: new inputs go to
# build/fuzz-work/corpus), one worker. A crash, leak, sanitizer report or
# broken promise exits non-zero with the reproducer in build/fuzz-work/.
# FUZZ_MAX_LEN (default 65536) bounds generated inputs.
set -eu
secs=${1:?usage: tools/fuzz_short.sh SECONDS}
cd "$(dirname "$0")/.."
ninja build/bin/fuzz_fatbin >/dev/null
work=build/fuzz-work
mkdir -p "$work/corpus"
exec build/bin/fuzz_fatbin -max_total_time="$secs" -max_len="${FUZZ_MAX_LEN:-65536}" \
    -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" tests/fuzz/corpus
