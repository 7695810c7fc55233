/* Unit tests of the fatbin parser (loader/fatbin.c) and of the loader's
 * checks that come before any driver call (loader/check.c: parse and
 * selection; the embedded blob's digests are test_embedded_check.c's). No
 * driver is installed: a test that reached the driver would crash on the
 * NULL table, which is itself part of what these tests prove.
 *
 * Under the asan build every buffer handed to the parser is an exact-size
 * heap block, and the truncation sweeps poison the bytes past the cut, so a
 * read outside [buf, buf+len) is a reported error, not a silent pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sanitizer/asan_interface.h>

#include "digest.h"
#include "fatbin.h"
#include "check.h"
#include "select.h"
#include "fatbin_blob.h"

extern const uint8_t bc__fatbin_bytes[];
extern const size_t bc__fatbin_size;
extern const uint64_t bc__fatbin_digest;

#define CAP 64

/* ---------------------------------------------------------------- helpers */

static uint8_t *exact_copy(const uint8_t *src, size_t len)
{
    uint8_t *p = malloc(len ? len : 1);
    assert_non_null(p);
    if (len)
        memcpy(p, src, len);
    return p;
}

static const char *last_message(void)
{
    static bc_error_detail d;
    bc_last_error(&d);
    return d.message;
}

static bc_status parse(const uint8_t *buf, size_t len, bc__fatbin_entry *e, size_t *n)
{
    return bc__fatbin_parse(buf, len, e, CAP, n);
}

/* Parses a heap copy of exactly len bytes. */
static bc_status parse_copy(const uint8_t *src, size_t len, size_t *n)
{
    bc__fatbin_entry e[CAP];
    uint8_t *b = exact_copy(src, len);
    bc_status st = parse(b, len, e, n);
    free(b);
    return st;
}

/* What every successful parse promises: entries tile their containers in
 * order, every byte range inside the buffer. */
static void check_invariants(const bc__fatbin_entry *e, size_t n, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        assert_true(e[i].header_size >= 64);
        assert_int_equal(e[i].header_offset + e[i].header_size, e[i].payload_offset);
        assert_true(e[i].payload_size > 0);
        assert_true(e[i].payload_offset <= len && e[i].payload_size <= len - e[i].payload_offset);
        assert_true(e[i].compressed_size <= e[i].payload_size);
        if (i + 1 < n)
            assert_true(e[i].payload_offset + e[i].payload_size <= e[i + 1].header_offset);
    }
}

static void assert_corrupt(const blob *b, const char *needle)
{
    size_t n = 12345;
    bc_status st = parse_copy(b->p, b->len, &n);
    assert_int_equal(st, BC_ERR_FATBIN_CORRUPT);
    assert_int_equal(n, 12345); /* out_count untouched */
    if (needle && strstr(last_message(), needle) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", last_message(), needle);
}

/* ------------------------------------------------------- the real fatbin */

static void test_embedded_parses(void **state)
{
    (void)state;
    bc__fatbin_entry e[CAP];
    size_t n = 0, counted = 0;
    uint8_t *b = exact_copy(bc__fatbin_bytes, bc__fatbin_size);
    assert_int_equal(parse(b, bc__fatbin_size, e, &n), BC_OK);
    assert_int_equal(bc__fatbin_parse(b, bc__fatbin_size, NULL, 0, &counted), BC_OK);
    assert_int_equal(counted, n);
    check_invariants(e, n, bc__fatbin_size);
    int sm90a = 0, sm100a = 0;
    for (size_t i = 0; i < n; i++) {
        char name[24];
        bc__fatbin_arch_name(&e[i], name, sizeof name);
        assert_int_equal(e[i].kind, BC__FATBIN_KIND_ELF); /* the build packs cubins only */
        assert_int_equal(e[i].compression, BC__FATBIN_UNCOMPRESSED);
        assert_memory_equal(b + e[i].payload_offset, "\177ELF", 4);
        sm90a += !strcmp(name, "sm_90a");
        sm100a += !strcmp(name, "sm_100a");
    }
    assert_int_equal(sm90a, 1);
    assert_int_equal(sm100a, 1);
    free(b);
}

/* The a/f bits as fatbinary 13.0 writes them (verified with tiny cubins):
 * the build's sm_100a entry has 0x100000, sm_100f 0x200000. */
static void test_embedded_suffix_bits(void **state)
{
    (void)state;
    bc__fatbin_entry e[CAP];
    size_t n = 0;
    assert_int_equal(parse(bc__fatbin_bytes, bc__fatbin_size, e, &n), BC_OK);
    for (size_t i = 0; i < n; i++) {
        if (e[i].suffix == 'a')
            assert_true((e[i].flags & 0x300000) == 0x100000);
        else if (e[i].suffix == 'f')
            assert_true((e[i].flags & 0x300000) == 0x200000);
        else
            assert_true((e[i].flags & 0x300000) == 0);
    }
}

/* --------------------------------------------------------- truncation */

/* Cuts the real fatbin at every length. One container: only the full
 * length parses (a prefix of one container is never a container). */
static void test_truncation_every_offset(void **state)
{
    (void)state;
    const size_t S = bc__fatbin_size;
    uint8_t *b = exact_copy(bc__fatbin_bytes, S);
    size_t n = 0;
    assert_int_equal(bc__fatbin_parse(b, S, NULL, 0, &n), BC_OK);
    for (size_t len = S; len-- > 0;) {
        ASAN_POISON_MEMORY_REGION(b + len, 1); /* bytes >= len are now off limits */
        size_t got = 777;
        bc_status st = bc__fatbin_parse(b, len, NULL, 0, &got);
        if (st != BC_ERR_FATBIN_CORRUPT)
            fail_msg("truncated at %zu: status %d", len, st);
        assert_int_equal(got, 777);
    }
    ASAN_UNPOISON_MEMORY_REGION(b, S);
    free(b);
}

/* The same cut, with the container's fatSize rewritten to the cut: now the
 * entry walk itself meets the truncation. Exactly the cuts that fall on an
 * entry boundary give a valid, shorter container with that many entries. */
static void test_truncation_with_matching_fatsize(void **state)
{
    (void)state;
    const size_t S = bc__fatbin_size;
    bc__fatbin_entry e[CAP];
    size_t n = 0;
    assert_int_equal(parse(bc__fatbin_bytes, S, e, &n), BC_OK);
    uint8_t *b = exact_copy(bc__fatbin_bytes, S);
    size_t ok = 0;
    for (size_t len = S + 1; len-- > 0;) {
        if (len < S)
            ASAN_POISON_MEMORY_REGION(b + len, 1);
        if (len >= 16)
            wr64(b + 8, len - 16);
        size_t expect = 0;
        for (size_t i = 0; i < n; i++)
            if (e[i].payload_offset + e[i].payload_size == len)
                expect = i + 1;
        size_t got = 0;
        bc_status st = bc__fatbin_parse(b, len, NULL, 0, &got);
        if (expect) {
            if (st != BC_OK || got != expect)
                fail_msg("cut at entry boundary %zu: status %d, %zu entries (want %zu)", len, st, got, expect);
            ok++;
        } else if (st != BC_ERR_FATBIN_CORRUPT) {
            fail_msg("cut at %zu: status %d, want BC_ERR_FATBIN_CORRUPT", len, st);
        }
    }
    assert_int_equal(ok, n);
    ASAN_UNPOISON_MEMORY_REGION(b, S);
    free(b);
}

/* Two concatenated containers: a cut parses iff it ends a container. */
static void test_truncation_two_containers(void **state)
{
    (void)state;
    blob a;
    small_fatbin(&a);
    const size_t S = a.len + bc__fatbin_size;
    uint8_t *b = malloc(S);
    assert_non_null(b);
    memcpy(b, a.p, a.len);
    memcpy(b + a.len, bc__fatbin_bytes, bc__fatbin_size);
    bc__fatbin_entry e[CAP];
    size_t n_all = 0;
    assert_int_equal(parse(b, S, e, &n_all), BC_OK);
    check_invariants(e, n_all, S);
    assert_int_equal(e[0].container, 0);
    assert_int_equal(e[2].container, 1);
    assert_int_equal(e[2].header_offset, a.len + 16);
    for (size_t len = S; len-- > 0;) {
        ASAN_POISON_MEMORY_REGION(b + len, 1);
        size_t got = 0;
        bc_status st = bc__fatbin_parse(b, len, NULL, 0, &got);
        if (len == a.len) {
            assert_int_equal(st, BC_OK);
            assert_int_equal(got, 2);
        } else if (st != BC_ERR_FATBIN_CORRUPT) {
            fail_msg("cut at %zu: status %d", len, st);
        }
    }
    ASAN_UNPOISON_MEMORY_REGION(b, S);
    free(b);
}

/* ------------------------------------------------------------- bit flips */

/* Bytes of an entry header (offset within it) that no flip may get past:
 * kind, version, header size, payload size, compressed size. */
static int entry_must_reject(size_t off) { return off < 0x14; }

/* Bytes whose flips change nothing the parser checks. */
static int entry_must_accept(size_t off, const bc__fatbin_entry *e)
{
    if (off >= 0x18 && off < 0x1C) /* code version */
        return 1;
    if (off >= 0x30 && off < 0x38) /* reserved */
        return 1;
    (void)e; /* the decompressed size (0x38) must be 0 when uncompressed: no flip there is harmless */
    return 0;
}

static void flip_and_check(uint8_t *b, size_t len, size_t byte, int expect)
{
    static const int ccs[][2] = {{9, 0}, {10, 0}, {10, 3}, {11, 0}, {12, 0}};
    for (int bit = 0; bit < 8; bit++) {
        b[byte] ^= (uint8_t)(1u << bit);
        bc__fatbin_entry e[CAP];
        size_t n = 0;
        bc_status st = parse(b, len, e, &n);
        if (st != BC_OK && st != BC_ERR_FATBIN_CORRUPT)
            fail_msg("byte %zu bit %d: status %d", byte, bit, st);
        if (expect < 0 && st != BC_ERR_FATBIN_CORRUPT)
            fail_msg("byte %zu bit %d: accepted a flip it must reject", byte, bit);
        if (expect > 0 && st != BC_OK)
            fail_msg("byte %zu bit %d: rejected a harmless flip: %s", byte, bit, last_message());
        if (st == BC_OK) {
            check_invariants(e, n, len);
            for (size_t c = 0; c < sizeof ccs / sizeof ccs[0]; c++) {
                size_t idx = 99;
                bc_status s2 = bc__select_image(e, n, ccs[c][0], ccs[c][1], &idx);
                assert_true(s2 == BC_OK || s2 == BC_ERR_UNSUPPORTED_ARCH || s2 == BC_ERR_FATBIN_COMPRESSED);
                if (s2 == BC_OK)
                    assert_true(idx < n && e[idx].kind == BC__FATBIN_KIND_ELF);
            }
        }
        b[byte] ^= (uint8_t)(1u << bit);
    }
}

static void test_bit_flips_over_headers(void **state)
{
    (void)state;
    const size_t S = bc__fatbin_size;
    bc__fatbin_entry e[CAP];
    size_t n = 0;
    assert_int_equal(parse(bc__fatbin_bytes, S, e, &n), BC_OK);
    uint8_t *b = exact_copy(bc__fatbin_bytes, S);
    for (size_t i = 0; i < 16; i++)
        flip_and_check(b, S, i, -1); /* every outer header bit matters */
    for (size_t k = 0; k < n; k++)
        for (size_t off = 0; off < e[k].header_size; off++)
            flip_and_check(b, S, e[k].header_offset + off,
                           entry_must_reject(off) ? -1 : entry_must_accept(off, &e[k]) ? 1 : 0);
    assert_memory_equal(b, bc__fatbin_bytes, S);
    free(b);
}

/* --------------------------------------------------- hand-broken inputs */

static void test_empty_and_short(void **state)
{
    (void)state;
    size_t n = 5;
    assert_int_equal(bc__fatbin_parse(NULL, 0, NULL, 0, &n), BC_ERR_FATBIN_CORRUPT);
    assert_int_equal(n, 5);
    blob b;
    small_fatbin(&b);
    b.len = 15;
    assert_corrupt(&b, "shorter than a 16-byte container header");
}

static void test_wrong_magic(void **state)
{
    (void)state;
    blob b;
    small_fatbin(&b);
    wr32(b.p, 0x1EE55A01); /* the old format's magic */
    assert_corrupt(&b, "magic 0x1ee55a01");
    small_fatbin(&b);
    wr32(b.p, 0x466243B1); /* the nvcc wrapper, not a container */
    assert_corrupt(&b, "magic");
}

static void test_container_header_fields(void **state)
{
    (void)state;
    blob b;
    small_fatbin(&b);
    wr16(b.p + 4, 2);
    assert_corrupt(&b, "version 2");
    small_fatbin(&b);
    wr16(b.p + 6, 24);
    assert_corrupt(&b, "header size 24");
    small_fatbin(&b);
    wr16(b.p + 6, 12);
    assert_corrupt(&b, "header size 12");
    small_fatbin(&b);
    wr64(b.p + 8, rd64(b.p + 8) + 4);
    assert_corrupt(&b, "not a multiple of 8");
    small_fatbin(&b);
    wr64(b.p + 8, 0);
    b.len = 16;
    assert_corrupt(&b, "no entries");
}

static void test_sizes_past_the_end(void **state)
{
    (void)state;
    blob b;
    small_fatbin(&b);
    wr64(b.p + 8, rd64(b.p + 8) + 8);
    assert_corrupt(&b, "runs past the buffer end");
    small_fatbin(&b);
    wr64(b.p + 8, UINT64_MAX - 7); /* a sum with it would wrap */
    assert_corrupt(&b, "runs past the buffer end");

    /* entry 1's payload: "entry 1: payload [off, off+size) runs past the container end at N" */
    small_fatbin(&b);
    size_t e1 = 16 + 64 + 64;
    char want[128];
    wr64(b.p + e1 + 8, 136);
    snprintf(want, sizeof want, "entry 1: payload [%zu, %zu+136) runs past the container end at %zu", e1 + 64,
             e1 + 64, b.len);
    assert_corrupt(&b, want);
    small_fatbin(&b);
    wr64(b.p + e1 + 8, UINT64_MAX & ~7ull);
    assert_corrupt(&b, "runs past the container end");
    small_fatbin(&b);
    wr32(b.p + e1 + 4, 0xFFFFFFF8u); /* header size */
    assert_corrupt(&b, "header [");
    small_fatbin(&b);
    wr32(b.p + 16 + 4, 56);
    assert_corrupt(&b, "header size 56");
    small_fatbin(&b);
    wr32(b.p + 16 + 4, 68);
    assert_corrupt(&b, "header size 68");
}

/* Entries are found by walking header + payload sizes, so an overlap can
 * only be written as sizes that wrap around or stop short of the next
 * header: both are refused. */
static void test_overlapping_entries(void **state)
{
    (void)state;
    blob b;
    small_fatbin(&b);
    /* entry 0's payload wraps back onto its own header (64 + size = 2^64) */
    wr64(b.p + 16 + 8, (uint64_t)0 - 64);
    assert_corrupt(&b, "runs past the container end");
    /* entry 0 claims 8 bytes less: entry 1 would start inside entry 0's payload */
    small_fatbin(&b);
    wr64(b.p + 16 + 8, 56);
    assert_corrupt(&b, "entry 1 at 136");
    /* entry 0 claims entry 1's header as its payload */
    small_fatbin(&b);
    wr64(b.p + 16 + 8, 64 + 64 + 128);
    size_t n = 0;
    assert_int_equal(parse_copy(b.p, b.len, &n), BC_OK); /* now one big, legal entry */
    assert_int_equal(n, 1);
    /* ...but a size that leaves a tail shorter than a header is refused */
    wr64(b.p + 16 + 8, 64 + 64 + 128 - 8);
    assert_corrupt(&b, "only 8 bytes left");
}

static void test_zero_sized_entry(void **state)
{
    (void)state;
    blob b;
    memset(&b, 0, sizeof b);
    begin_container(&b);
    add_entry(&b, BC__FATBIN_KIND_ELF, 90, BC__FATBIN_FLAG_ARCH_SPECIFIC, 64);
    add_entry(&b, BC__FATBIN_KIND_PTX, 90, 0, 0);
    end_container(&b);
    assert_corrupt(&b, "entry 1 at 144: zero-sized payload");
}

static void test_entry_fields(void **state)
{
    (void)state;
    blob b;
    const size_t e0 = 16;
    small_fatbin(&b);
    wr16(b.p + e0, 3);
    assert_corrupt(&b, "unknown kind 3");
    small_fatbin(&b);
    wr16(b.p + e0 + 2, 0x0102);
    assert_corrupt(&b, "entry version 0x0102");
    small_fatbin(&b);
    wr64(b.p + e0 + 8, 60);
    assert_corrupt(&b, "not a multiple of 8");
    small_fatbin(&b);
    wr32(b.p + e0 + 0x10, 8); /* compressed size without a flag */
    assert_corrupt(&b, "no compression flag");
    small_fatbin(&b);
    wr64(b.p + e0 + 0x38, 12345); /* decompressed size without a flag */
    assert_corrupt(&b, "decompressed size 12345 but no compression flag");
    small_fatbin(&b);
    wr64(b.p + e0 + 0x28, 0x11 | BC__FATBIN_FLAG_ZSTD);
    wr32(b.p + e0 + 0x10, 72); /* > 64-byte payload */
    wr64(b.p + e0 + 0x38, 100);
    assert_corrupt(&b, "compressed size 72 does not fit");
    small_fatbin(&b);
    wr64(b.p + e0 + 0x28, 0x11 | BC__FATBIN_FLAG_ZSTD | BC__FATBIN_FLAG_LZ4);
    wr32(b.p + e0 + 0x10, 8);
    assert_corrupt(&b, "both LZ4 and ZSTD");
    small_fatbin(&b);
    wr64(b.p + e0 + 0x28, 0x11 | BC__FATBIN_FLAG_ZSTD);
    wr32(b.p + e0 + 0x10, 8);
    assert_corrupt(&b, "decompressed size 0");
    small_fatbin(&b);
    wr64(b.p + e0 + 0x28, 0x11 | BC__FATBIN_FLAG_ARCH_SPECIFIC | BC__FATBIN_FLAG_FAMILY);
    assert_corrupt(&b, "both arch-specific (a) and family (f)");
    small_fatbin(&b);
    wr32(b.p + e0 + 0x1C, 0);
    assert_corrupt(&b, "arch 0 is not an SM number");
    small_fatbin(&b);
    wr32(b.p + e0 + 0x24, 5); /* identifier length, no offset */
    assert_corrupt(&b, "identifier length 5");
    small_fatbin(&b);
    wr32(b.p + e0 + 0x20, 0x50); /* identifier past a 64-byte header */
    wr32(b.p + e0 + 0x24, 4);
    assert_corrupt(&b, "identifier [80, 80+4)");
    small_fatbin(&b);
    wr32(b.p + e0 + 0x14, 0x40); /* options record past a 64-byte header */
    assert_corrupt(&b, "options record");
    small_fatbin(&b);
    memcpy(b.p + e0 + 64, "\177ELG", 4);
    assert_corrupt(&b, "ELF magic");
}

static void test_compressed_entry_parses(void **state)
{
    (void)state;
    blob b;
    small_fatbin(&b);
    wr64(b.p + 16 + 0x28, 0x11 | BC__FATBIN_FLAG_ARCH_SPECIFIC | BC__FATBIN_FLAG_ZSTD);
    wr32(b.p + 16 + 0x10, 61);
    wr64(b.p + 16 + 0x38, 4000);
    memcpy(b.p + 16 + 64, "\x28\xb5\x2f\xfd", 4); /* a ZSTD frame, not an ELF */
    bc__fatbin_entry e[CAP];
    size_t n = 0;
    assert_int_equal(parse(b.p, b.len, e, &n), BC_OK);
    assert_int_equal(e[0].compression, BC__FATBIN_ZSTD);
    assert_int_equal(e[0].compressed_size, 61);
    assert_int_equal(e[0].decompressed_size, 4000);
    /* CC 9.0 would run it: selection refuses rather than picking another */
    size_t idx = 9;
    assert_int_equal(bc__select_image(e, n, 9, 0, &idx), BC_ERR_FATBIN_COMPRESSED);
    assert_int_equal(idx, 9);
    assert_non_null(strstr(last_message(), "zstd-compressed"));
}

static void test_identifier_and_options_in_header(void **state)
{
    (void)state;
    /* an 80-byte header holding an identifier and an options record, as
     * fatbinary --ident/--cmdline writes them */
    blob b;
    memset(&b, 0, sizeof b);
    begin_container(&b);
    uint8_t *h = b.p + b.len;
    add_entry(&b, BC__FATBIN_KIND_PTX, 90, BC__FATBIN_FLAG_ARCH_SPECIFIC, 32);
    memmove(h + 80, h + 64, 32);
    memset(h + 64, 0, 16);
    wr32(h + 4, 80);
    wr32(h + 0x14, 64);        /* options record at 64: {72, 3} */
    wr32(h + 64, 72);
    wr32(h + 68, 3);
    memcpy(h + 72, "-O3", 3);
    wr32(h + 0x20, 76);        /* identifier "id" at 76 */
    wr32(h + 0x24, 2);
    memcpy(h + 76, "id", 2);
    b.len += 16;
    end_container(&b);
    bc__fatbin_entry e[CAP];
    size_t n = 0;
    assert_int_equal(parse(b.p, b.len, e, &n), BC_OK);
    assert_int_equal(e[0].header_size, 80);
    assert_int_equal(e[0].identifier_offset, 76);
    char name[24];
    assert_string_equal(bc__fatbin_arch_name(&e[0], name, sizeof name), "compute_90a");
    wr32(h + 68, 9); /* options string now runs past the header */
    assert_corrupt(&b, "options string [72, 72+9)");
}

static void test_cap_and_count(void **state)
{
    (void)state;
    blob b;
    small_fatbin(&b);
    bc__fatbin_entry e[2];
    size_t n = 0;
    assert_int_equal(bc__fatbin_parse(b.p, b.len, e, 1, &n), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(n, 0);
    assert_non_null(strstr(last_message(), "more than the table's 1"));
    assert_int_equal(bc__fatbin_parse(b.p, b.len, NULL, 0, &n), BC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(bc__fatbin_parse(b.p, b.len, e, 2, &n), BC_OK);
    /* a corrupt buffer is corrupt whatever the cap */
    wr32(b.p, 0);
    assert_int_equal(bc__fatbin_parse(b.p, b.len, e, 1, &n), BC_ERR_FATBIN_CORRUPT);
    assert_int_equal(bc__fatbin_parse(b.p, b.len, NULL, 1, &n), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(bc__fatbin_parse(b.p, b.len, e, 2, NULL), BC_ERR_INVALID_ARGUMENT);
}

static void test_trailing_bytes(void **state)
{
    (void)state;
    blob b;
    small_fatbin(&b);
    memset(b.p + b.len, 0, 8);
    b.len += 8;
    assert_corrupt(&b, "8 trailing bytes");
    small_fatbin(&b);
    memset(b.p + b.len, 0, 16);
    b.len += 16;
    assert_corrupt(&b, "container 1 at");
}

/* ------------------------------------------- loader checks before the driver */

static void test_check_corrupt_and_unsupported(void **state)
{
    (void)state;
    bc__loader_choice c;
    blob b;
    small_fatbin(&b);
    wr64(b.p + 16 + 8, 0);
    const uint64_t dg = bc__xxh64(b.p, b.len, 0);
    assert_int_equal(bc__loader_check(b.p, b.len, &dg, 9, 0, 0, &c), BC_ERR_FATBIN_CORRUPT);
    /* the real blob on a device it has no image for: refused before the driver */
    assert_int_equal(bc__loader_check(bc__fatbin_bytes, bc__fatbin_size, &bc__fatbin_digest, 7, 5, 0, &c),
                     BC_ERR_UNSUPPORTED_ARCH);
    assert_non_null(strstr(last_message(), "sm_75"));
    assert_non_null(strstr(last_message(), "sm_80"));
    assert_non_null(strstr(last_message(), "sm_120"));
    assert_non_null(strstr(last_message(), "sm_90a"));
    assert_non_null(strstr(last_message(), "sm_100a"));
    assert_int_equal(bc__loader_check(NULL, 4, NULL, 9, 0, 0, &c), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(bc__loader_check(b.p, b.len, NULL, 9, 0, 0, NULL), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(bc__loader_check(NULL, 0, NULL, 9, 0, 0, &c), BC_ERR_FATBIN_CORRUPT);
}

/* A well-formed container with more entries than the loader takes is
 * refused as over the limit, whatever the device. */
static void test_check_entry_limit(void **state)
{
    (void)state;
    static blob b;
    memset(&b, 0, sizeof b);
    begin_container(&b);
    for (int i = 0; i <= BC__LOADER_MAX_ENTRIES; i++)
        add_entry(&b, BC__FATBIN_KIND_ELF, 90, BC__FATBIN_FLAG_ARCH_SPECIFIC, 8);
    end_container(&b);
    size_t n = 0;
    assert_int_equal(bc__fatbin_parse(b.p, b.len, NULL, 0, &n), BC_OK);
    assert_int_equal(n, BC__LOADER_MAX_ENTRIES + 1);
    bc__loader_choice c;
    assert_int_equal(bc__loader_check(b.p, b.len, NULL, 9, 0, 0, &c), BC_ERR_FATBIN_CORRUPT);
    assert_non_null(strstr(last_message(), "over the loader's limit"));
    /* one entry fewer passes the limit: the check goes on to read the selected entry as a cubin (these
     * entries are 8 bytes, not one) */
    b.len -= 72;
    end_container(&b);
    assert_int_equal(bc__loader_check(b.p, b.len, NULL, 9, 0, 0, &c), BC_ERR_FATBIN_CORRUPT);
    assert_null(strstr(last_message(), "over the loader's limit"));
    assert_non_null(strstr(last_message(), "not a whole ELF header"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embedded_parses),
        cmocka_unit_test(test_embedded_suffix_bits),
        cmocka_unit_test(test_truncation_every_offset),
        cmocka_unit_test(test_truncation_with_matching_fatsize),
        cmocka_unit_test(test_truncation_two_containers),
        cmocka_unit_test(test_bit_flips_over_headers),
        cmocka_unit_test(test_empty_and_short),
        cmocka_unit_test(test_wrong_magic),
        cmocka_unit_test(test_container_header_fields),
        cmocka_unit_test(test_sizes_past_the_end),
        cmocka_unit_test(test_overlapping_entries),
        cmocka_unit_test(test_zero_sized_entry),
        cmocka_unit_test(test_entry_fields),
        cmocka_unit_test(test_compressed_entry_parses),
        cmocka_unit_test(test_identifier_and_options_in_header),
        cmocka_unit_test(test_cap_and_count),
        cmocka_unit_test(test_trailing_bytes),
        cmocka_unit_test(test_check_corrupt_and_unsupported),
        cmocka_unit_test(test_check_entry_limit),
    };
    return cmocka_run_group_tests_name("fatbin", tests, NULL, NULL);
}
