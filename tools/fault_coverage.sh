#!/bin/sh
# Counts, with gcov, the library's driver call sites that the fault-injection
# sweep (tests/unit/test_fault.c: open, modules, plans, launches, graphs,
# waits, boot checks, close, the resident executor) reaches. Every driver
# call the sweep makes is made to fail in some run, with four CUresults, so
# a site reached is a site whose failure was injected.
#
#   sh tools/fault_coverage.sh        (after `ninja`; builds under build/cov/)
#
# A site is a source line of runtime/ or loader/ that calls the driver:
# BC_CU(...), BC_CU_CLEANUP(...), BC_CU_CLEANUP_RESULT(...), a direct
# bc__drv->cu*() call (a helper thread's; not cuGetErrorName, which only
# names an error), or the loader's table.cuDriverGetVersion / table.cuInit.
# Prints "covered N of M driver call sites" and lists the sites missed.
set -eu
cd "$(dirname "$0")/.."
CC=${CC:-clang-19}
COV=${COV:-llvm-cov}
B=build/cov
rm -rf "$B" && mkdir -p "$B/obj"
ninja build/obj/loader/embedded_blob.o build/gen/fatbin_digest.c build/gen/groups_digest.c build/gen/sk_digest.c build/bin/libcmocka.so.0 > /dev/null

FLAGS="-std=c11 -D_GNU_SOURCE -O0 -g -Wall -Wextra -Werror -Wno-unused-parameter --coverage
  -Iruntime/include -Iruntime -Iloader -Ikernels_ptx -I/usr/local/cuda/include -Ibuild/gen -Itools/cli -Itools/common"
LIB_SRC="$(ls runtime/*.c loader/*.c) build/gen/fatbin_digest.c build/gen/groups_digest.c build/gen/sk_digest.c"
FAKE_SRC="tests/unit/fake_driver.c tests/unit/fake_device.c tests/unit/fake_mem.c tests/unit/fake_module.c
  tests/unit/fake_graph.c tests/unit/fake_kernel.c tests/unit/fake_resident.c"
OBJS=""
for f in $LIB_SRC $FAKE_SRC tests/unit/test_fault.c; do
  o="$B/obj/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')"
  $CC $FLAGS -c "$f" -o "$o"
  OBJS="$OBJS $o"
done
$CC --coverage $OBJS build/obj/loader/embedded_blob.o -o "$B/test_unit_fault" -lcmocka -ldl -lpthread -lm \
  -Wl,-rpath,"$PWD/build/bin" -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc
"$B/test_unit_fault" > "$B/sweep.txt" 2>&1 || { cat "$B/sweep.txt"; echo "fault_coverage: the sweep failed"; exit 1; }
grep "fault-injection sweep" "$B/sweep.txt"

# gcov text per library source: "count:line:source" (gcov writes into the
# current directory, which must be the one the sources were compiled from)
for f in $LIB_SRC; do
  $COV gcov -o "$B/obj/$(echo "$f" | tr / _ | sed 's/\.c$/.gcno/')" "$f" > /dev/null 2>&1 || true
done
mv ./*.gcov "$B/" 2>/dev/null || true

SITE='BC_CU\(|BC_CU_CLEANUP\(|BC_CU_CLEANUP_RESULT\(|bc__drv->cu[A-Za-z]+\(|table\.cu(DriverGetVersion|Init)\('
total=0 covered=0
: > "$B/missed.txt"
for f in $(ls runtime/*.c loader/*.c); do
  g="$B/$(basename "$f").gcov"
  for line in $(grep -nE "$SITE" "$f" | grep -v 'cuGetErrorName' | grep -vE '^[0-9]+:\s*(/\*|\*|#define)' | cut -d: -f1); do
    total=$((total + 1))
    count=$(awk -F: -v L="$line" '{n=$2; gsub(/ /,"",n)} n==L {c=$1; gsub(/ /,"",c); print c; exit}' "$g" 2>/dev/null || true)
    case "$count" in
      ''|'-'|'#####'|'=====') echo "  $f:$line: $(sed -n "${line}p" "$f" | sed 's/^ *//')" >> "$B/missed.txt" ;;
      *) covered=$((covered + 1)) ;;
    esac
  done
done
echo "fault_coverage: covered $covered of $total driver call sites (runtime/, loader/) with the fault-injection sweep"
if [ -s "$B/missed.txt" ]; then echo "not reached:"; cat "$B/missed.txt"; fi
