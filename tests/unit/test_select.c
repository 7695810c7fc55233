/* Unit tests of image selection (loader/select.c): the documented rule over
 * a table of compute capabilities, against the real embedded fatbin and
 * against hand-made entry lists. Driver-free. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "barecuda/selftest.h"
#include "fatbin.h"
#include "gemm_abi.h"
#include "select.h"

extern const uint8_t bc__fatbin_bytes[];
extern const size_t bc__fatbin_size;

static const char *last_message(void)
{
    static bc_error_detail d;
    bc_last_error(&d);
    return d.message;
}

/* Name of the entry chosen for cc, or the failing status as text. */
static const char *pick_by(bc_status (*sel)(const bc__fatbin_entry *, size_t, int, int, size_t *),
                           const bc__fatbin_entry *e, size_t n, int major, int minor, char *buf, size_t cap)
{
    size_t idx = 0;
    bc_status st = sel(e, n, major, minor, &idx);
    if (st == BC_ERR_UNSUPPORTED_ARCH)
        return "UNSUPPORTED";
    if (st == BC_ERR_FATBIN_COMPRESSED)
        return "COMPRESSED";
    if (st != BC_OK)
        return "?";
    return bc__fatbin_arch_name(&e[idx], buf, cap);
}

static const char *pick(const bc__fatbin_entry *e, size_t n, int major, int minor, char *buf, size_t cap)
{
    return pick_by(bc__select_image, e, n, major, minor, buf, cap);
}

static const char *pick_ptx(const bc__fatbin_entry *e, size_t n, int major, int minor, char *buf, size_t cap)
{
    return pick_by(bc__select_ptx, e, n, major, minor, buf, cap);
}

static bc__fatbin_entry mk(uint16_t kind, uint32_t arch, char suffix)
{
    bc__fatbin_entry e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.arch = arch;
    e.suffix = suffix;
    return e;
}

#define ELF(arch, sfx) mk(BC__FATBIN_KIND_ELF, arch, sfx)
#define PTX(arch, sfx) mk(BC__FATBIN_KIND_PTX, arch, sfx)

/* The README's table: what each compute capability gets from the build. */
static void test_embedded_table(void **state)
{
    (void)state;
    static const struct {
        int major, minor;
        const char *want;
    } table[] = {
        {7, 5, "UNSUPPORTED"}, {8, 0, "sm_80"},       {8, 6, "sm_80"},       {8, 7, "sm_80"},
        {8, 9, "sm_80"},       {9, 0, "sm_90a"},      {10, 0, "sm_100a"},    {10, 1, "sm_100f"},
        {10, 3, "sm_103a"},    {11, 0, "sm_110a"},    {12, 0, "sm_120"},     {12, 1, "sm_120"},
        {9, 1, "UNSUPPORTED"}, {13, 0, "UNSUPPORTED"},
    };
    bc__fatbin_entry e[64];
    size_t n = 0;
    assert_int_equal(bc__fatbin_parse(bc__fatbin_bytes, bc__fatbin_size, e, 64, &n), BC_OK);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        char buf[24];
        const char *got = pick(e, n, table[i].major, table[i].minor, buf, sizeof buf);
        if (strcmp(got, table[i].want) != 0)
            fail_msg("cc %d.%d: got %s, want %s", table[i].major, table[i].minor, got, table[i].want);
    }
}

static void test_unsupported_message(void **state)
{
    (void)state;
    bc__fatbin_entry e[64];
    size_t n = 0, idx = 77;
    assert_int_equal(bc__fatbin_parse(bc__fatbin_bytes, bc__fatbin_size, e, 64, &n), BC_OK);
    assert_int_equal(bc__select_image(e, n, 7, 5, &idx), BC_ERR_UNSUPPORTED_ARCH);
    assert_int_equal(idx, 77);
    const char *m = last_message();
    assert_non_null(strstr(m, "device sm_75 (compute capability 7.5)"));
    assert_non_null(strstr(m, "sm_80, sm_120, sm_90a, sm_100a, sm_100f, sm_103a, sm_110a"));
}

static void test_suffix_rules(void **state)
{
    (void)state;
    char b[24];
    /* a: exactly its CC */
    bc__fatbin_entry a[] = {ELF(90, 'a')};
    assert_string_equal(pick(a, 1, 9, 0, b, sizeof b), "sm_90a");
    assert_string_equal(pick(a, 1, 9, 1, b, sizeof b), "UNSUPPORTED");
    bc__fatbin_entry a103[] = {ELF(103, 'a')};
    assert_string_equal(pick(a103, 1, 10, 0, b, sizeof b), "UNSUPPORTED");
    assert_string_equal(pick(a103, 1, 10, 3, b, sizeof b), "sm_103a");
    assert_string_equal(pick(a103, 1, 10, 4, b, sizeof b), "UNSUPPORTED");
    /* f: same major, minor at or above */
    bc__fatbin_entry f[] = {ELF(100, 'f')};
    assert_string_equal(pick(f, 1, 10, 0, b, sizeof b), "sm_100f");
    assert_string_equal(pick(f, 1, 10, 3, b, sizeof b), "sm_100f");
    assert_string_equal(pick(f, 1, 11, 0, b, sizeof b), "UNSUPPORTED");
    assert_string_equal(pick(f, 1, 9, 0, b, sizeof b), "UNSUPPORTED");
    bc__fatbin_entry f103[] = {ELF(103, 'f')};
    assert_string_equal(pick(f103, 1, 10, 0, b, sizeof b), "UNSUPPORTED");
    /* plain: same major, minor at or above; never across majors */
    bc__fatbin_entry p[] = {ELF(80, 0)};
    assert_string_equal(pick(p, 1, 8, 0, b, sizeof b), "sm_80");
    assert_string_equal(pick(p, 1, 8, 9, b, sizeof b), "sm_80");
    assert_string_equal(pick(p, 1, 9, 0, b, sizeof b), "UNSUPPORTED");
    assert_string_equal(pick(p, 1, 7, 5, b, sizeof b), "UNSUPPORTED");
}

static void test_ranking(void **state)
{
    (void)state;
    char b[24];
    /* exact a beats f beats plain, whatever the order in the file */
    bc__fatbin_entry mix[] = {ELF(100, 0), ELF(100, 'f'), ELF(103, 'a'), ELF(100, 'a')};
    assert_string_equal(pick(mix, 4, 10, 0, b, sizeof b), "sm_100a");
    assert_string_equal(pick(mix, 4, 10, 3, b, sizeof b), "sm_103a");
    assert_string_equal(pick(mix, 4, 10, 1, b, sizeof b), "sm_100f");
    bc__fatbin_entry fp[] = {ELF(100, 'f'), ELF(101, 0)};
    assert_string_equal(pick(fp, 2, 10, 3, b, sizeof b), "sm_100f"); /* family beats a closer plain */
    /* within a class the closest (highest) minor wins */
    bc__fatbin_entry plain[] = {ELF(80, 0), ELF(86, 0), ELF(87, 0)};
    assert_string_equal(pick(plain, 3, 8, 0, b, sizeof b), "sm_80");
    assert_string_equal(pick(plain, 3, 8, 6, b, sizeof b), "sm_86");
    assert_string_equal(pick(plain, 3, 8, 9, b, sizeof b), "sm_87");
    bc__fatbin_entry fams[] = {ELF(103, 'f'), ELF(100, 'f')};
    assert_string_equal(pick(fams, 2, 10, 3, b, sizeof b), "sm_103f");
    assert_string_equal(pick(fams, 2, 10, 0, b, sizeof b), "sm_100f");
    /* duplicates: the first in file order */
    bc__fatbin_entry dup[] = {ELF(90, 'a'), ELF(90, 'a')};
    size_t idx = 9;
    assert_int_equal(bc__select_image(dup, 2, 9, 0, &idx), BC_OK);
    assert_int_equal(idx, 0);
    /* sm_90 and sm_90a on 9.0: the arch-specific one */
    bc__fatbin_entry h[] = {ELF(90, 0), ELF(90, 'a')};
    assert_string_equal(pick(h, 2, 9, 0, b, sizeof b), "sm_90a");
}

static void test_ptx_never_selected(void **state)
{
    (void)state;
    char b[24];
    bc__fatbin_entry e[] = {PTX(90, 'a'), PTX(80, 0), mk(BC__FATBIN_KIND_NVVM, 90, 0)};
    assert_string_equal(pick(e, 3, 9, 0, b, sizeof b), "UNSUPPORTED");
    assert_non_null(strstr(last_message(), "compute_90a (PTX: JIT only when allowed)"));
    bc__fatbin_entry both[] = {PTX(90, 'a'), ELF(90, 'a')};
    assert_string_equal(pick(both, 2, 9, 0, b, sizeof b), "sm_90a");
}

static void test_compressed_winner_is_refused(void **state)
{
    (void)state;
    char b[24];
    bc__fatbin_entry e[] = {ELF(90, 0), ELF(90, 'a')};
    e[1].compression = BC__FATBIN_ZSTD;
    /* the best image is compressed: refused, not silently replaced by sm_90 */
    assert_string_equal(pick(e, 2, 9, 0, b, sizeof b), "COMPRESSED");
    e[1].compression = BC__FATBIN_LZ4;
    assert_string_equal(pick(e, 2, 9, 0, b, sizeof b), "COMPRESSED");
    assert_non_null(strstr(last_message(), "lz4-compressed"));
}

static void test_bad_arguments(void **state)
{
    (void)state;
    size_t idx;
    bc__fatbin_entry e[] = {ELF(90, 'a')};
    assert_int_equal(bc__select_image(NULL, 1, 9, 0, &idx), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(bc__select_image(e, 1, 9, 0, NULL), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(bc__select_image(e, 1, -1, 0, &idx), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(bc__select_image(NULL, 0, 9, 0, &idx), BC_ERR_UNSUPPORTED_ARCH);
    assert_non_null(strstr(last_message(), "images present: none"));
}

/* Many images: the list in the message is cut with "...", never overflows. */
static void test_long_image_list_is_truncated(void **state)
{
    (void)state;
    bc__fatbin_entry e[100];
    for (int i = 0; i < 100; i++)
        e[i] = ELF(100 + (unsigned)(i % 10), 'a');
    size_t idx;
    assert_int_equal(bc__select_image(e, 100, 12, 0, &idx), BC_ERR_UNSUPPORTED_ARCH);
    const char *m = last_message();
    size_t len = strlen(m);
    assert_true(len < sizeof(((bc_error_detail *)0)->message));
    assert_true(len > 3 && strcmp(m + len - 3, "...") == 0);
    assert_non_null(strstr(m, "images present: sm_100a, sm_101a"));
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(bc__fatbin_kind_name(BC__FATBIN_KIND_PTX), "ptx");
    assert_string_equal(bc__fatbin_kind_name(BC__FATBIN_KIND_ELF), "elf");
    assert_string_equal(bc__fatbin_kind_name(BC__FATBIN_KIND_NVVM), "nvvm");
    assert_string_equal(bc__fatbin_kind_name(4), "?");
    assert_string_equal(bc__fatbin_compression_name(BC__FATBIN_UNCOMPRESSED), "none");
    assert_string_equal(bc__fatbin_compression_name(BC__FATBIN_LZ4), "lz4");
    assert_string_equal(bc__fatbin_compression_name(BC__FATBIN_ZSTD), "zstd");
    char b[8];
    bc__fatbin_entry e = ELF(103, 'a');
    assert_string_equal(bc__fatbin_arch_name(&e, b, sizeof b), "sm_103a");
    assert_string_equal(bc__fatbin_arch_name(&e, b, 4), "sm_"); /* cut, still terminated */
    e = mk(BC__FATBIN_KIND_NVVM, 90, 0);
    assert_string_equal(bc__fatbin_arch_name(&e, b, sizeof b), "compute"); /* "compute_90" cut at 8 */
}

#define FAM(f) (1u << BC__FAM_##f)

static void test_families(void **state)
{
    (void)state;
    bc__fatbin_entry e;
    e = ELF(90, 'a'); /* the portable and the resident kernels for sm_90a are a cubin of their own */
    assert_int_equal(bc__image_families(&e), FAM(ALL) | FAM(SM90));
    e = ELF(100, 'a');
    assert_int_equal(bc__image_families(&e), FAM(ALL) | FAM(SM100));
    e = ELF(100, 'f');
    assert_int_equal(bc__image_families(&e), FAM(ALL) | FAM(SM100));
    e = ELF(103, 'a');
    assert_int_equal(bc__image_families(&e), FAM(ALL) | FAM(SM100));
    e = ELF(110, 'a');
    assert_int_equal(bc__image_families(&e), FAM(ALL) | FAM(SM100));
    e = ELF(120, 0);
    assert_int_equal(bc__image_families(&e), FAM(ALL) | FAM(SM80));
    e = ELF(121, 'a');
    assert_int_equal(bc__image_families(&e), FAM(ALL) | FAM(SM80));
    e = ELF(80, 0);
    assert_int_equal(bc__image_families(&e), FAM(ALL) | FAM(SM80));
    e = ELF(86, 0);
    assert_int_equal(bc__image_families(&e), FAM(ALL) | FAM(SM80));
    e = ELF(75, 0);
    assert_int_equal(bc__image_families(&e), FAM(ALL));
    e = PTX(90, 'a');
    assert_int_equal(bc__image_families(&e), 0);
}

/* The smoke check's poison (0xFF bytes) must differ from every expected
 * value, or an unwritten element could pass. */
static void test_smoke_seed_avoids_poison(void **state)
{
    (void)state;
    for (uint32_t i = 0; i < BC_SMOKE_ELEMENTS; i++)
        if (bc_smoke_value(i, BC_SMOKE_SEED) == 0xFFFFFFFFu)
            fail_msg("element %u's expected value equals the poison", i);
}

/* JIT candidates (only for callers that opted in): compute_XYa on X.Y only,
 * compute_XYf on X.m >= X.Y, plain compute_XY on anything >= X.Y; exact
 * beats family beats plain, then the highest arch. */
static void test_ptx_selection(void **state)
{
    (void)state;
    char b[24];
    bc__fatbin_entry e[] = {PTX(80, 0), PTX(90, 'a'), PTX(86, 0), PTX(100, 'f'), ELF(120, 'a'),
                            mk(BC__FATBIN_KIND_NVVM, 120, 0)};
    static const struct {
        int major, minor;
        const char *want;
    } table[] = {
        {9, 0, "compute_90a"},  {8, 9, "compute_86"},   {8, 6, "compute_86"},   {8, 0, "compute_80"},
        {10, 0, "compute_100f"}, {10, 3, "compute_100f"}, {11, 0, "compute_86"}, {12, 0, "compute_86"},
        {7, 5, "UNSUPPORTED"},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        assert_string_equal(pick_ptx(e, 6, table[i].major, table[i].minor, b, sizeof b), table[i].want);
    assert_non_null(strstr(last_message(), "no PTX compiles for it"));
    /* cubins are never a JIT candidate, and a cubin that runs is not looked at here */
    bc__fatbin_entry only_elf[] = {ELF(90, 'a')};
    assert_string_equal(pick_ptx(only_elf, 1, 9, 0, b, sizeof b), "UNSUPPORTED");
    assert_true(bc__any_cubin_runs(only_elf, 1, 9, 0));
    assert_false(bc__any_cubin_runs(only_elf, 1, 9, 1));
    assert_false(bc__any_cubin_runs(e, 6, 9, 0));
    /* the winner compressed: refused, not replaced by a worse one */
    e[1].compression = BC__FATBIN_ZSTD;
    assert_string_equal(pick_ptx(e, 6, 9, 0, b, sizeof b), "COMPRESSED");
    assert_non_null(strstr(last_message(), "raw PTX only"));
    size_t idx;
    assert_int_equal(bc__select_ptx(e, 6, 9, 0, NULL), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(bc__select_ptx(e, 6, -1, 0, &idx), BC_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embedded_table),
        cmocka_unit_test(test_unsupported_message),
        cmocka_unit_test(test_suffix_rules),
        cmocka_unit_test(test_ranking),
        cmocka_unit_test(test_ptx_never_selected),
        cmocka_unit_test(test_compressed_winner_is_refused),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_long_image_list_is_truncated),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_families),
        cmocka_unit_test(test_smoke_seed_avoids_poison),
        cmocka_unit_test(test_ptx_selection),
    };
    return cmocka_run_group_tests_name("select", tests, NULL, NULL);
}
