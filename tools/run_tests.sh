#!/bin/sh
# Runs the test binaries that build.ninja lists; prints each CMocka summary.
# usage: run_tests.sh all|unit|asan|gpu
# GPU tests report SKIPPED (not passed) when no driver/device is present.
mode=${1:-all}
cd "$(dirname "$0")/.." || exit 2
fail=0
skipped=0
log=$(mktemp)
run() {
    for t in "$@"; do
        [ -x "$t" ] || { echo "run_tests: missing $t (build it first)"; fail=1; continue; }
        echo "=== $t"
        "$t" > "$log" 2>&1 || fail=1
        cat "$log"
        n=$(sed -n 's/^\[  SKIPPED \] \([0-9][0-9]*\) test(s), listed below:$/\1/p' "$log")
        skipped=$((skipped + ${n:-0}))
    done
}
unit=$(ls build/bin/test_unit_* 2>/dev/null)
asan=$(ls build/asan/bin/test_unit_* 2>/dev/null)
gpu=$(ls build/bin/test_gpu_* 2>/dev/null)
case "$mode" in
    all)  run $unit $gpu ;;
    unit) run $unit ;;
    asan) ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 run $asan ;;
    gpu)  run $gpu ;;
    *) echo "usage: $0 all|unit|asan|gpu" >&2; exit 2 ;;
esac
rm -f "$log"
if [ $fail -ne 0 ]; then
    echo "run_tests: $mode: FAILURES above"
elif [ $skipped -gt 0 ]; then
    echo "run_tests: $mode: no failures; $skipped test(s) SKIPPED (not run: no GPU, or not for this device), listed above"
else
    echo "run_tests: $mode: all tests passed"
fi
exit $fail
