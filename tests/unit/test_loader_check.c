/* The pure part of loading a user module (no driver installed: reaching it
 * would crash on the NULL table): plain cubins (ELF header, e_flags layouts,
 * truncation), the nvcc-built fixtures (tests/fixtures/) through
 * bc__loader_check per device and JIT choice, and the file reader's rules.
 * Run from the repository root (the fixtures are read by relative path). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "check.h"
#include "cubin.h"
#include "digest.h"
#include "file.h"

#define FIX "tests/fixtures/"

/* XXH64 of each committed fixture: a rebuild that changes the bytes must
 * update these (tests/fixtures/README.md). */
#define DIGEST_FATBIN 0xaa1322c8a27341faull
#define DIGEST_ZSTD 0xe5ac8d5c4b5104f9ull
#define DIGEST_PTX 0x34a05fa3364939f6ull
#define DIGEST_CUBIN 0xe35945ce73a52270ull

static const char *last_message(void)
{
    static bc_error_detail d;
    bc_last_error(&d);
    return d.message;
}

typedef struct file {
    uint8_t *p;
    size_t len;
} file;

static file load(const char *path)
{
    file f = {NULL, 0};
    bc_status st = bc__read_file(path, 64u << 20, &f.p, &f.len);
    if (st)
        fail_msg("%s: %s (run the tests from the repository root)", path, last_message());
    return f;
}

/* bc__loader_check on (a copy of) f for one device; returns the status. */
static bc_status check(const file *f, const uint64_t *digest, int major, int minor, int jit, bc__loader_choice *c)
{
    return bc__loader_check(f->p, f->len, digest, major, minor, jit, c);
}

/* ---------------------------------------------------------------- cubins */

static void test_cubin_e_flags(void **state)
{
    (void)state;
    /* ptxas-built cubins of this build: CUDA 13.0's ptxas writes ELF ABI 8 (SM in bits 8..15, 'a' not
     * recorded); the sm_80 and sm_90a images come from CUDA 12.9's ptxas, ABI 7 (SM in the low byte,
     * 'a' at 0x800) */
    static const struct {
        const char *path;
        unsigned arch, abi;
        char suffix;
    } built[] = {
        {"build/kernels/sm80.cubin", 80, 7, 0},       {"build/kernels/sm90a.cubin", 90, 7, 'a'},
        {"build/kernels/sm100a.cubin", 100, 8, 0},    {"build/kernels/sm100f.cubin", 100, 8, 0},
        {"build/kernels/sm103a.cubin", 103, 8, 0},    {"build/kernels/sm110a.cubin", 110, 8, 0},
        {FIX "user_kernels_sm90a.cubin", 90, 8, 0},
    };
    for (size_t i = 0; i < sizeof built / sizeof built[0]; i++) {
        file f = load(built[i].path);
        bc__fatbin_entry e;
        assert_int_equal(bc__cubin_describe(f.p, f.len, &e), BC_OK);
        assert_int_equal(e.arch, built[i].arch);
        assert_int_equal(e.kind, BC__FATBIN_KIND_ELF);
        assert_int_equal(e.payload_offset, 0);
        assert_int_equal(e.payload_size, f.len);
        assert_int_equal(e.code_major, built[i].abi); /* the ELF ABI version */
        assert_int_equal(e.suffix, built[i].suffix);
        /* the older layout (ABI 7): SM in the low byte, 'a' at 0x800 */
        f.p[8] = 7;
        uint32_t flags = 0x00500500u | built[i].arch | 0x800u;
        memcpy(f.p + 0x30, &flags, 4);
        assert_int_equal(bc__cubin_describe(f.p, f.len, &e), BC_OK);
        assert_int_equal(e.arch, built[i].arch);
        assert_int_equal(e.suffix, 'a');
        /* ABI 8 with its accelerator bit */
        f.p[8] = 8;
        flags = built[i].arch << 8 | 0x8u;
        memcpy(f.p + 0x30, &flags, 4);
        assert_int_equal(bc__cubin_describe(f.p, f.len, &e), BC_OK);
        assert_int_equal(e.suffix, 'a');
        free(f.p);
    }
}

/* Every truncation of a real cubin is refused (the section table sits at
 * the end); asan sees any read past the exact-size copy. */
static void test_cubin_truncated(void **state)
{
    (void)state;
    file f = load(FIX "user_kernels_sm90a.cubin");
    for (size_t cut = 0; cut < f.len; cut++) {
        uint8_t *p = malloc(cut ? cut : 1);
        memcpy(p, f.p, cut);
        bc__fatbin_entry e;
        bc_status st = bc__cubin_describe(p, cut, &e);
        if (st != BC_ERR_FATBIN_CORRUPT)
            fail_msg("a cubin cut to %zu of %zu bytes gave %s", cut, f.len, bc_status_string(st));
        bc__loader_choice c;
        assert_int_equal(bc__loader_check(p, cut, NULL, 9, 0, 0, &c), BC_ERR_FATBIN_CORRUPT);
        free(p);
    }
    free(f.p);
}

static void test_cubin_header_fields(void **state)
{
    (void)state;
    file f = load(FIX "user_kernels_sm90a.cubin");
    bc__fatbin_entry e;
    static const struct {
        size_t at;
        uint8_t v;
        const char *needle;
    } bad[] = {
        {4, 1, "ELF class 1"},       {5, 2, "data 2"},    {18, 62, "machine 62"},
        {0x3a, 0x10, "entries are 16 bytes"}, {0x2f, 0x01, "section header table"},
        {0x31, 0x00, "name no SM"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t *p = malloc(f.len);
        memcpy(p, f.p, f.len);
        p[bad[i].at] = bad[i].v;
        assert_int_equal(bc__cubin_describe(p, f.len, &e), BC_ERR_FATBIN_CORRUPT);
        if (strstr(last_message(), bad[i].needle) == NULL)
            fail_msg("byte 0x%zx = 0x%02x: message '%s' lacks '%s'", bad[i].at, bad[i].v, last_message(),
                     bad[i].needle);
        free(p);
    }
    assert_int_equal(bc__cubin_describe(NULL, 64, &e), BC_ERR_INVALID_ARGUMENT);
    assert_false(bc__is_elf(f.p, 3));
    free(f.p);
}

/* The check reads the selected cubin as the load will (its ELF header,
 * section names and toolkit note): what it passes, the load does not refuse
 * as corrupt. A plain cubin whose section-name index is past its sections;
 * a fatbin whose sm_90 ELF entry is 8 bytes, the magic and zeros (both
 * found by the module fuzzer, the load refusing what the check passed). */
static void test_check_reads_the_cubin(void **state)
{
    (void)state;
    file f = load(FIX "user_kernels_sm90a.cubin");
    bc__loader_choice c;
    assert_int_equal(bc__loader_check(f.p, f.len, NULL, 9, 0, 0, &c), BC_OK);
    const uint16_t shnum = (uint16_t)(f.p[0x3c] | f.p[0x3d] << 8);
    f.p[0x3e] = (uint8_t)shnum, f.p[0x3f] = (uint8_t)(shnum >> 8); /* e_shstrndx = e_shnum */
    assert_int_equal(bc__loader_check(f.p, f.len, NULL, 9, 0, 0, &c), BC_ERR_FATBIN_CORRUPT);
    assert_non_null(strstr(last_message(), "section-name index"));
    free(f.p);
    static const uint8_t tiny[88] = {
        0x50, 0xed, 0x55, 0xba, 0x01, 0x00, 0x10, 0x00, 0x48, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x01, 0x01, 0x40, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x5a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x45, 0x4c, 0x46, 0x00, 0x00, 0x00, 0x00,
    };
    assert_int_equal(bc__loader_check(tiny, sizeof tiny, NULL, 9, 0, 0, &c), BC_ERR_FATBIN_CORRUPT);
    assert_non_null(strstr(last_message(), "not a whole ELF header"));
}

/* A container's ELF entry is read as a plain cubin is (a whole CUDA ELF,
 * every table inside its payload) and must hold a cubin for the entry's SM
 * number: the real sm_90a cubin in an sm_90a entry passes; the same bytes
 * with a program-header table past the payload, or in an sm_100a entry,
 * are refused as corrupt. */
static void test_container_entry_read_as_cubin(void **state)
{
    (void)state;
    file f = load(FIX "user_kernels_sm90a.cubin");
    const size_t pay = (f.len + 7u) & ~(size_t)7u, len = 16 + 64 + pay;
    uint8_t *b = calloc(1, len);
    assert_non_null(b);
    const uint32_t magic = BC__FATBIN_MAGIC;
    const uint16_t one = 1, sixteen = 16, kind = BC__FATBIN_KIND_ELF, ver = 0x0101, eight = 8;
    const uint64_t fat = len - 16, payload = pay, flags = BC__FATBIN_FLAG_ARCH_SPECIFIC | 0x11;
    const uint32_t hsize = 64;
    memcpy(b, &magic, 4), memcpy(b + 4, &one, 2), memcpy(b + 6, &sixteen, 2), memcpy(b + 8, &fat, 8);
    uint8_t *h = b + 16;
    memcpy(h, &kind, 2), memcpy(h + 2, &ver, 2), memcpy(h + 4, &hsize, 4), memcpy(h + 8, &payload, 8);
    memcpy(h + 0x18, &eight, 2), memcpy(h + 0x1A, &one, 2), memcpy(h + 0x28, &flags, 8);
    memcpy(h + 64, f.p, f.len);
    bc__loader_choice c;
    for (uint32_t arch = 90; arch <= 100; arch += 10) {
        memcpy(h + 0x1C, &arch, 4);
        const bc_status st = bc__loader_check(b, len, NULL, arch / 10, 0, 0, &c);
        if (arch == 90)
            assert_int_equal(st, BC_OK);
        else {
            assert_int_equal(st, BC_ERR_FATBIN_CORRUPT);
            assert_non_null(strstr(last_message(), "holds a cubin for sm_90"));
        }
    }
    const uint32_t arch = 90;
    memcpy(h + 0x1C, &arch, 4);
    const uint64_t phoff = 1u << 20; /* e_phoff: far past the payload */
    memcpy(h + 64 + 0x20, &phoff, 8);
    assert_int_equal(bc__loader_check(b, len, NULL, 9, 0, 0, &c), BC_ERR_FATBIN_CORRUPT);
    free(b);
    free(f.p);
}

/* --------------------------------------------------------- nvcc fixtures */

static void test_plain_cubin_selection(void **state)
{
    (void)state;
    file f = load(FIX "user_kernels_sm90a.cubin");
    assert_int_equal(bc__xxh64(f.p, f.len, 0), DIGEST_CUBIN);
    bc__loader_choice c;
    const uint64_t dg = DIGEST_CUBIN, wrong = DIGEST_CUBIN + 1;
    assert_int_equal(check(&f, &dg, 9, 0, 0, &c), BC_OK);
    assert_true(c.plain_cubin);
    assert_int_equal(c.entries, 1);
    assert_string_equal(c.arch, "sm_90");
    assert_int_equal(c.entry.payload_size, f.len);
    assert_int_equal(c.digest, DIGEST_CUBIN);
    assert_int_equal(check(&f, &wrong, 9, 0, 0, &c), BC_ERR_DIGEST_MISMATCH);
    /* read as plain sm_90: 9.x runs it by the rule (the driver has the last word) */
    assert_int_equal(check(&f, NULL, 8, 6, 0, &c), BC_ERR_UNSUPPORTED_ARCH);
    assert_non_null(strstr(last_message(), "sm_90"));
    assert_int_equal(check(&f, NULL, 10, 0, 1, &c), BC_ERR_UNSUPPORTED_ARCH); /* no PTX in a cubin */
    /* the per-entry check: a plain cubin is one entry, the whole file (the committed digest) */
    bc__loader_choice e;
    assert_int_equal(bc__loader_check_entry(f.p, f.len, &dg, 1, 0, 9, 0, &e), BC_OK);
    assert_true(e.plain_cubin);
    assert_string_equal(e.arch, "sm_90");
    assert_int_equal(e.digest, DIGEST_CUBIN);
    memset(&e, 0xAB, sizeof e);
    assert_int_equal(bc__loader_check_entry(f.p, f.len, &wrong, 1, 0, 9, 0, &e), BC_ERR_DIGEST_MISMATCH);
    assert_non_null(strstr(last_message(), "cubin"));
    assert_int_equal(e.entries, (int)0xABABABAB); /* written only on success */
    assert_int_equal(bc__loader_check_entry(f.p, f.len, &dg, 2, 0, 9, 0, &e), BC_ERR_DIGEST_MISMATCH);
    assert_non_null(strstr(last_message(), "different builds"));
    assert_int_equal(bc__loader_check_entry(f.p, f.len, &dg, 1, 0, 8, 6, &e), BC_ERR_UNSUPPORTED_ARCH);
    free(f.p);
}

static void test_fixture_selection(void **state)
{
    (void)state;
    file f = load(FIX "user_kernels.fatbin");
    assert_int_equal(bc__xxh64(f.p, f.len, 0), DIGEST_FATBIN);
    static const struct {
        int major, minor, jit;
        bc_status st;
        const char *arch;
    } table[] = {
        {9, 0, 0, BC_OK, "sm_90a"},   {9, 0, 1, BC_OK, "sm_90a"}, /* a cubin that runs wins over JIT */
        {8, 0, 0, BC_OK, "sm_80"},    {8, 6, 0, BC_OK, "sm_80"},   {8, 7, 0, BC_OK, "sm_80"},
        {8, 9, 1, BC_OK, "sm_80"},    {12, 0, 0, BC_ERR_UNSUPPORTED_ARCH, NULL},
        {12, 0, 1, BC_OK, "compute_80"}, {10, 0, 1, BC_OK, "compute_80"},
        {7, 5, 0, BC_ERR_UNSUPPORTED_ARCH, NULL}, {7, 5, 1, BC_ERR_UNSUPPORTED_ARCH, NULL},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        bc__loader_choice c;
        memset(&c, 0, sizeof c);
        bc_status st = check(&f, NULL, table[i].major, table[i].minor, table[i].jit, &c);
        if (st != table[i].st)
            fail_msg("cc %d.%d jit %d: %s (%s)", table[i].major, table[i].minor, table[i].jit, bc_status_string(st),
                     last_message());
        if (st)
            continue;
        assert_string_equal(c.arch, table[i].arch);
        assert_int_equal(c.entries, 3);
        assert_int_equal(c.jit, table[i].arch[0] == 'c');
        assert_int_equal(c.entry.kind, c.jit ? BC__FATBIN_KIND_PTX : BC__FATBIN_KIND_ELF);
        assert_false(c.plain_cubin);
        if (c.jit) /* the text nvcc wrote, NUL-terminated inside its padded payload */
            assert_non_null(memchr(f.p + c.entry.payload_offset, 0, c.entry.payload_size));
    }
    free(f.p);
}

static void test_fixture_jit_rules(void **state)
{
    (void)state;
    bc__loader_choice c;
    file z = load(FIX "user_kernels_zstd.fatbin");
    assert_int_equal(bc__xxh64(z.p, z.len, 0), DIGEST_ZSTD);
    assert_int_equal(check(&z, NULL, 9, 0, 0, &c), BC_OK); /* its cubins are raw */
    assert_int_equal(check(&z, NULL, 12, 0, 1, &c), BC_ERR_FATBIN_COMPRESSED);
    assert_non_null(strstr(last_message(), "zstd"));
    free(z.p);
    file p = load(FIX "user_kernels_ptx.fatbin");
    assert_int_equal(bc__xxh64(p.p, p.len, 0), DIGEST_PTX);
    assert_int_equal(check(&p, NULL, 9, 0, 0, &c), BC_ERR_UNSUPPORTED_ARCH);
    assert_non_null(strstr(last_message(), "compute_80 (PTX: JIT only when allowed)"));
    assert_int_equal(check(&p, NULL, 9, 0, 1, &c), BC_OK);
    assert_true(c.jit);
    assert_string_equal(c.arch, "compute_80");
    assert_int_equal(c.entries, 1);
    free(p.p);
}

/* ---------------------------------------------------------------- files */

static void test_file_rules(void **state)
{
    (void)state;
    static uint8_t sentinel[1];
    uint8_t *buf = sentinel;
    size_t len = 12345;
    char dir[] = "/tmp/bc_files_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/missing", dir);
    assert_int_equal(bc__read_file(path, 100, &buf, &len), BC_ERR_FILE_IO);
    assert_non_null(strstr(last_message(), "No such file"));
    assert_int_equal(bc__read_file(dir, 100, &buf, &len), BC_ERR_NOT_REGULAR_FILE);
    assert_non_null(strstr(last_message(), "a directory"));
    assert_int_equal(bc__read_file("/dev/null", 100, &buf, &len), BC_ERR_NOT_REGULAR_FILE);
    assert_non_null(strstr(last_message(), "a device"));
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0); /* no writer: a blocking open would hang here */
    assert_int_equal(bc__read_file(path, 100, &buf, &len), BC_ERR_NOT_REGULAR_FILE);
    assert_non_null(strstr(last_message(), "a FIFO"));
    unlink(path);
    assert_int_equal(bc__read_file(FIX "user_kernels.fatbin", 13711, &buf, &len), BC_ERR_FILE_TOO_LARGE);
    assert_non_null(strstr(last_message(), "13712 bytes, over the 13711-byte limit"));
    assert_true(buf == sentinel && len == 12345); /* outputs untouched on failure */
    assert_int_equal(bc__read_file(FIX "user_kernels.fatbin", 13712, &buf, &len), BC_OK);
    assert_int_equal(len, 13712);
    assert_int_equal(bc__xxh64(buf, len, 0), DIGEST_FATBIN);
    free(buf);
    /* a symbolic link is followed; an empty file reads as 0 bytes */
    char target[PATH_MAX];
    assert_non_null(realpath(FIX "user_kernels_ptx.fatbin", target));
    snprintf(path, sizeof path, "%s/link", dir);
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(bc__read_file(path, 1u << 20, &buf, &len), BC_OK);
    assert_int_equal(bc__xxh64(buf, len, 0), DIGEST_PTX);
    free(buf);
    unlink(path);
    snprintf(path, sizeof path, "%s/empty", dir);
    FILE *e = fopen(path, "w");
    fclose(e);
    assert_int_equal(bc__read_file(path, 100, &buf, &len), BC_OK);
    assert_int_equal(len, 0);
    bc__loader_choice c;
    assert_int_equal(bc__loader_check(buf, len, NULL, 9, 0, 0, &c), BC_ERR_FATBIN_CORRUPT);
    free(buf);
    unlink(path);
    rmdir(dir);
    assert_int_equal(bc__read_file(NULL, 1, &buf, &len), BC_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cubin_e_flags),       cmocka_unit_test(test_cubin_truncated),
        cmocka_unit_test(test_cubin_header_fields), cmocka_unit_test(test_plain_cubin_selection),
        cmocka_unit_test(test_check_reads_the_cubin), cmocka_unit_test(test_container_entry_read_as_cubin),
        cmocka_unit_test(test_fixture_selection),   cmocka_unit_test(test_fixture_jit_rules),
        cmocka_unit_test(test_file_rules),
    };
    return cmocka_run_group_tests_name("loader_check", tests, NULL, NULL);
}
