/* libFuzzer harness for the fatbin parser and the image selector.
 *
 * Whatever the bytes: the parser returns BC_OK or BC_ERR_FATBIN_CORRUPT (or
 * BC_ERR_INVALID_ARGUMENT for a well-formed buffer with more entries than
 * the table), reads nothing outside the input (ASan), and every entry it
 * accepts lies inside the input, in order, without overlap; counting mode
 * agrees with table mode; the selector, over a set of compute capabilities,
 * returns a documented status and, on BC_OK, an uncompressed ELF entry that
 * may run on that capability. A broken promise aborts (a finding).
 *
 * Build: ninja fuzz; replay the corpus: ninja fuzz-replay; fuzz for a while:
 * tools/fuzz_short.sh SECONDS. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatbin.h"
#include "cubin.h"
#include "select.h"

#define CAP 4 /* small, so the too-many-entries path runs too */

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "fuzz_fatbin: broken promise: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                 \
        }                                                                            \
    } while (0)

static const int ccs[][2] = {{7, 5}, {8, 0}, {8, 6}, {9, 0}, {10, 0}, {10, 1},
                             {10, 3}, {11, 0}, {12, 0}, {12, 1}};

static volatile uint8_t sink;

static void check_entries(const uint8_t *data, size_t size, const bc__fatbin_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        CHECK(e[i].header_size >= 64 && e[i].header_size % 8 == 0);
        CHECK(e[i].header_offset + e[i].header_size == e[i].payload_offset);
        CHECK(e[i].payload_size > 0 && e[i].payload_size % 8 == 0);
        CHECK(e[i].payload_offset <= size && e[i].payload_size <= size - e[i].payload_offset);
        CHECK(e[i].compressed_size <= e[i].payload_size);
        CHECK(e[i].suffix == 0 || e[i].suffix == 'a' || e[i].suffix == 'f');
        CHECK((e[i].compression == BC__FATBIN_UNCOMPRESSED) == (e[i].compressed_size == 0));
        if (e[i].identifier_offset)
            CHECK(e[i].identifier_offset + (uint64_t)e[i].identifier_len <= e[i].header_size);
        if (i + 1 < n)
            CHECK(e[i].payload_offset + e[i].payload_size <= e[i + 1].header_offset);
        /* touch both ends so ASan sees any range that escaped the input */
        sink ^= data[e[i].header_offset];
        sink ^= data[e[i].payload_offset + e[i].payload_size - 1];
        char name[24];
        bc__fatbin_arch_name(&e[i], name, sizeof name);
        CHECK(strlen(name) >= 4);
    }
}

static void check_selection(const uint8_t *data, const bc__fatbin_entry *e, size_t n)
{
    for (size_t c = 0; c < sizeof ccs / sizeof ccs[0]; c++) {
        size_t idx = SIZE_MAX;
        bc_status st = bc__select_image(e, n, ccs[c][0], ccs[c][1], &idx);
        CHECK(st == BC_OK || st == BC_ERR_UNSUPPORTED_ARCH || st == BC_ERR_FATBIN_COMPRESSED);
        if (st != BC_OK) {
            CHECK(idx == SIZE_MAX);
            continue;
        }
        CHECK(idx < n);
        CHECK(e[idx].kind == BC__FATBIN_KIND_ELF);
        CHECK(e[idx].compression == BC__FATBIN_UNCOMPRESSED);
        CHECK(e[idx].arch / 10 == (unsigned)ccs[c][0]);
        if (e[idx].suffix == 'a')
            CHECK(e[idx].arch % 10 == (unsigned)ccs[c][1]);
        else
            CHECK(e[idx].arch % 10 <= (unsigned)ccs[c][1]);
        CHECK((bc__image_families(&e[idx]) & (1u << BC__FAM_ALL)) != 0);
        bc__cubin_req r;
        st = bc__cubin_requirement(&e[idx], data + e[idx].payload_offset, e[idx].payload_size, &r);
        CHECK(st == BC_OK || st == BC_ERR_FATBIN_CORRUPT);
        if (st == BC_OK)
            CHECK(r.min_driver >= 12000);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bc__fatbin_entry small[CAP], *e = small;
    size_t counted = SIZE_MAX, n = SIZE_MAX;
    bc_status sc = bc__fatbin_parse(data, size, NULL, 0, &counted);
    bc_status st = bc__fatbin_parse(data, size, small, CAP, &n);
    CHECK(sc == BC_OK || sc == BC_ERR_FATBIN_CORRUPT);
    if (sc != BC_OK) {
        CHECK(st == sc && counted == SIZE_MAX && n == SIZE_MAX);
        return 0;
    }
    if (counted > CAP) {
        CHECK(st == BC_ERR_INVALID_ARGUMENT && n == SIZE_MAX);
        CHECK(counted <= size / 72); /* 64-byte header + 8-byte payload at least */
        e = malloc(counted * sizeof *e);
        CHECK(e != NULL);
        st = bc__fatbin_parse(data, size, e, counted, &n);
    }
    CHECK(st == BC_OK && n == counted);
    check_entries(data, size, e, n);
    check_selection(data, e, n);
    if (e != small)
        free(e);
    return 0;
}
