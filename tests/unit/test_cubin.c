/* What a cubin requires of the driver (loader/cubin.h), read from the
 * embedded images as the build wrote them and from damaged copies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "barecuda/status.h"
#include "cubin.h"
#include "fatbin.h"

extern const uint8_t bc__fatbin_bytes[];
extern const size_t bc__fatbin_size;

static bc__fatbin_entry entries[64];
static size_t n_entries;

static const bc__fatbin_entry *entry(const char *arch)
{
    if (n_entries == 0)
        assert_int_equal(bc__fatbin_parse(bc__fatbin_bytes, bc__fatbin_size, entries, 64, &n_entries), BC_OK);
    for (size_t i = 0; i < n_entries; i++) {
        char name[24];
        if (strcmp(bc__fatbin_arch_name(&entries[i], name, sizeof name), arch) == 0)
            return &entries[i];
    }
    fail_msg("no %s image in the embedded fatbin", arch);
    return NULL;
}

static bc__cubin_req req_of(const char *arch)
{
    const bc__fatbin_entry *e = entry(arch);
    bc__cubin_req r;
    memset(&r, 0xAB, sizeof r);
    assert_int_equal(bc__cubin_requirement(e, bc__fatbin_bytes + e->payload_offset, e->payload_size, &r), BC_OK);
    return r;
}

/* The build's choice of ptxas per image, as the cubins record it: CUDA 12.9
 * for the images a CUDA 12 driver must load (ELF ABI 7, but ABI 8 for the
 * Blackwell-generation sm_120), CUDA 13.0 (ABI 8) for the tcgen05 ones. */
static void test_embedded_images(void **state)
{
    (void)state;
    static const struct {
        const char *arch;
        int toolkit, abi, min_driver;
    } table[] = {
        {"sm_80", 12090, 7, 12000},   {"sm_90a", 12090, 7, 12000},  {"sm_120", 12090, 8, 12080},
        {"sm_100a", 13000, 8, 13000}, {"sm_100f", 13000, 8, 13000}, {"sm_103a", 13000, 8, 13000},
        {"sm_110a", 13000, 8, 13000},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        bc__cubin_req r = req_of(table[i].arch);
        if (r.toolkit != table[i].toolkit || r.abi != table[i].abi || r.min_driver != table[i].min_driver)
            fail_msg("%s: toolkit %d abi %d min %d; want %d %d %d", table[i].arch, r.toolkit, r.abi, r.min_driver,
                     table[i].toolkit, table[i].abi, table[i].min_driver);
    }
}

static void test_arch_floor(void **state)
{
    (void)state;
    assert_int_equal(bc__arch_min_driver(80, 0), 12000);
    assert_int_equal(bc__arch_min_driver(90, 'a'), 12000);
    assert_int_equal(bc__arch_min_driver(100, 'a'), 12080);
    assert_int_equal(bc__arch_min_driver(100, 'f'), 12090);
    assert_int_equal(bc__arch_min_driver(103, 'a'), 12090);
    assert_int_equal(bc__arch_min_driver(110, 'a'), 13000);
    assert_int_equal(bc__arch_min_driver(120, 0), 12080);
    assert_int_equal(bc__arch_min_driver(121, 0), 12090);
}

/* A copy of an image's bytes to damage. */
static uint8_t copy[1u << 20];

static const bc__fatbin_entry *copy_of(const char *arch)
{
    const bc__fatbin_entry *e = entry(arch);
    assert_true(e->payload_size <= sizeof copy);
    memcpy(copy, bc__fatbin_bytes + e->payload_offset, e->payload_size);
    return e;
}

static void expect_corrupt(const bc__fatbin_entry *e, size_t len, const char *what)
{
    bc__cubin_req r = {1, 2, 3};
    bc_status st = bc__cubin_requirement(e, copy, len, &r);
    if (st != BC_ERR_FATBIN_CORRUPT)
        fail_msg("%s: %s", what, bc_status_string(st));
    assert_int_equal(r.toolkit, 1); /* untouched on failure */
}

static void wr64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static void wr16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

static void test_damaged(void **state)
{
    (void)state;
    const bc__fatbin_entry *e = copy_of("sm_100a");
    expect_corrupt(e, 63, "shorter than an ELF header");
    copy[4] = 1;
    expect_corrupt(e, e->payload_size, "32-bit class");
    e = copy_of("sm_100a");
    wr64(copy + 0x28, e->payload_size); /* section headers past the end */
    expect_corrupt(e, e->payload_size, "e_shoff past the end");
    e = copy_of("sm_100a");
    wr16(copy + 0x3E, 0xFFFF); /* section-name table index out of range */
    expect_corrupt(e, e->payload_size, "e_shstrndx");
    e = copy_of("sm_100a");
    expect_corrupt(e, 1024, "truncated before its section headers");
    /* an ABI 8 cubin without sections is taken as CUDA 13.0 */
    e = copy_of("sm_100a");
    wr16(copy + 0x3C, 0);
    bc__cubin_req r;
    assert_int_equal(bc__cubin_requirement(e, copy, e->payload_size, &r), BC_OK);
    assert_int_equal(r.toolkit, 13000);
    /* an ABI 7 cubin without notes: e_version is its toolkit (118 = 11.8, below the floor) */
    e = copy_of("sm_80");
    wr16(copy + 0x3C, 0);
    copy[20] = 118;
    assert_int_equal(bc__cubin_requirement(e, copy, e->payload_size, &r), BC_OK);
    assert_int_equal(r.toolkit, 11080);
    assert_int_equal(r.min_driver, 12000);
    assert_int_equal(bc__cubin_requirement(NULL, copy, 64, &r), BC_ERR_INVALID_ARGUMENT);
}

/* The open-time check's verdict and message. */
static void test_check_driver(void **state)
{
    (void)state;
    const bc__fatbin_entry *e = entry("sm_110a");
    assert_int_equal(bc__cubin_check_driver(e, bc__fatbin_bytes, "sm_110a", 13000), BC_OK);
    assert_int_equal(bc__cubin_check_driver(e, bc__fatbin_bytes, "sm_110a", 12090), BC_ERR_DRIVER_TOO_OLD);
    bc_error_detail d;
    bc_last_error(&d);
    assert_non_null(strstr(d.message, "the sm_110a image needs a CUDA 13.0 driver"));
    assert_non_null(strstr(d.message, "this driver is CUDA 12.9"));
    e = entry("sm_80");
    assert_int_equal(bc__cubin_check_driver(e, bc__fatbin_bytes, "sm_80", 12000), BC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embedded_images),
        cmocka_unit_test(test_arch_floor),
        cmocka_unit_test(test_damaged),
        cmocka_unit_test(test_check_driver),
    };
    return cmocka_run_group_tests_name("cubin", tests, NULL, NULL);
}
