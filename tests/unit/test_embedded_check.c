/* Unit tests of the embedded fatbin's checks before any driver call
 * (loader/check.c): the whole-blob digest that `barecuda fatbin` and user
 * modules use, and the per-entry check that device open uses (the entry
 * headers and the selected image against the build's digests). No driver
 * is installed. The parser itself is tested in test_fatbin.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"

extern const uint8_t bc__fatbin_bytes[];
extern const size_t bc__fatbin_size;
extern const uint64_t bc__fatbin_digest;
extern const uint64_t bc__fatbin_entry_digest[];
extern const size_t bc__fatbin_entry_count;
extern const uint64_t bc__fatbin_headers_digest;

static const char *last_message(void)
{
    static bc_error_detail d;
    bc_last_error(&d);
    return d.message;
}

static void test_check_digest_mismatch(void **state)
{
    (void)state;
    bc__loader_choice c;
    memset(&c, 0xAB, sizeof c);
    const uint64_t wrong = bc__fatbin_digest ^ 1;
    bc_status st = bc__loader_check(bc__fatbin_bytes, bc__fatbin_size, &wrong, 9, 0, 0, &c);
    assert_int_equal(st, BC_ERR_DIGEST_MISMATCH);
    char want[64];
    snprintf(want, sizeof want, "0x%016llx", (unsigned long long)wrong);
    assert_non_null(strstr(last_message(), want));
    snprintf(want, sizeof want, "0x%016llx", (unsigned long long)bc__fatbin_digest);
    assert_non_null(strstr(last_message(), want));
    assert_int_equal(c.entries, (int)0xABABABAB); /* written only on success */
    /* the right digest, or none, selects the sm_90a image and reports the digest */
    assert_int_equal(bc__loader_check(bc__fatbin_bytes, bc__fatbin_size, &bc__fatbin_digest, 9, 0, 0, &c), BC_OK);
    assert_string_equal(c.arch, "sm_90a");
    assert_int_equal(c.digest, bc__fatbin_digest);
    assert_int_equal(c.jit, 0);
    assert_int_equal(c.plain_cubin, 0);
    assert_int_equal(bc__loader_check(bc__fatbin_bytes, bc__fatbin_size, NULL, 10, 3, 1, &c), BC_OK);
    assert_string_equal(c.arch, "sm_103a");
}

/* The embedded blob's check: the entry headers (what selection reads) and
 * the selected entry are hashed, against the build's digests. A flipped
 * byte in the selected image is refused, naming the entry; one in the
 * payload of an image this device does not load is not read (and is
 * refused on the device that loads it); a changed arch or flags field of
 * any entry is refused on every device, before it can steer selection. */
static void test_check_entry_digest(void **state)
{
    (void)state;
    bc__loader_choice c;
    const uint64_t *t = bc__fatbin_entry_digest, hd = bc__fatbin_headers_digest;
    const size_t n = bc__fatbin_entry_count;
    assert_int_equal(bc__loader_check_entry(bc__fatbin_bytes, bc__fatbin_size, t, n, hd, 9, 0, &c), BC_OK);
    assert_string_equal(c.arch, "sm_90a");
    assert_int_equal(c.entries, (int)n);
    assert_int_equal(c.digest, t[c.index]);
    const int sm90 = c.index;
    const bc__fatbin_entry e90 = c.entry;
    assert_int_equal(bc__loader_check_entry(bc__fatbin_bytes, bc__fatbin_size, t, n, hd, 10, 0, &c), BC_OK);
    assert_string_equal(c.arch, "sm_100a");
    assert_true(c.index != sm90);
    const bc__fatbin_entry e100 = c.entry;

    /* the build's blob is one container whose entries tile it: header, then each entry's header and
     * payload back to back (read from the bytes here, not from the parser) */
    size_t at = 16, k = 0;
    while (at < bc__fatbin_size && k < n) {
        uint32_t hs;
        uint64_t ps;
        memcpy(&hs, bc__fatbin_bytes + at + 4, 4);
        memcpy(&ps, bc__fatbin_bytes + at + 8, 8);
        at += hs + ps, k++;
    }
    assert_int_equal(at, bc__fatbin_size);
    assert_int_equal(k, n);

    uint8_t *copy = malloc(bc__fatbin_size);
    assert_non_null(copy);
    memcpy(copy, bc__fatbin_bytes, bc__fatbin_size);
    copy[e90.payload_offset + e90.payload_size / 2] ^= 1; /* inside the sm_90a image */
    bc__loader_choice keep;
    memset(&keep, 0xAB, sizeof keep);
    assert_int_equal(bc__loader_check_entry(copy, bc__fatbin_size, t, n, hd, 9, 0, &keep), BC_ERR_DIGEST_MISMATCH);
    assert_non_null(strstr(last_message(), "sm_90a"));
    char want[64];
    snprintf(want, sizeof want, "0x%016llx", (unsigned long long)t[sm90]);
    assert_non_null(strstr(last_message(), want));
    assert_int_equal(keep.entries, (int)0xABABABAB); /* written only on success */
    assert_int_equal(bc__loader_check_entry(copy, bc__fatbin_size, t, n, hd, 10, 0, &c), BC_OK);
    memcpy(copy, bc__fatbin_bytes, bc__fatbin_size);
    copy[e100.payload_offset + 8] ^= 0x80; /* inside the sm_100a image */
    assert_int_equal(bc__loader_check_entry(copy, bc__fatbin_size, t, n, hd, 9, 0, &c), BC_OK);
    assert_int_equal(bc__loader_check_entry(copy, bc__fatbin_size, t, n, hd, 10, 0, &c), BC_ERR_DIGEST_MISMATCH);
    /* a changed byte the cubin read would refuse (its ELF class, its section-name index) is still a digest
     * mismatch: the selected entry is hashed before it is read */
    static const size_t elf_bytes[] = {4, 0x3e};
    for (size_t i = 0; i < sizeof elf_bytes / sizeof elf_bytes[0]; i++) {
        memcpy(copy, bc__fatbin_bytes, bc__fatbin_size);
        copy[e100.payload_offset + elf_bytes[i]] ^= 0x7f;
        assert_int_equal(bc__loader_check_entry(copy, bc__fatbin_size, t, n, hd, 10, 0, &c), BC_ERR_DIGEST_MISMATCH);
    }

    /* selection's inputs in another entry's header: its arch (+0x1c) and its 'a' flag (+0x28, bit 20) */
    static const struct {
        size_t off;
        uint8_t mask;
    } flips[] = {{0x1c, 1}, {0x28 + 2, 0x10}};
    for (size_t f = 0; f < sizeof flips / sizeof flips[0]; f++) {
        memcpy(copy, bc__fatbin_bytes, bc__fatbin_size);
        copy[e100.header_offset + flips[f].off] ^= flips[f].mask;
        for (int major = 9; major <= 10; major++) {
            memset(&keep, 0xAB, sizeof keep);
            const bc_status st = bc__loader_check_entry(copy, bc__fatbin_size, t, n, hd, major, 0, &keep);
            if (st != BC_ERR_DIGEST_MISMATCH)
                fail_msg("sm_100a header byte +0x%zx changed: cc %d.0 got %d, want a digest mismatch", flips[f].off,
                         major, (int)st);
            assert_non_null(strstr(last_message(), "entry headers"));
            assert_int_equal(keep.entries, (int)0xABABABAB);
        }
    }
    free(copy);

    /* a table of another length, another headers digest, or none */
    assert_int_equal(bc__loader_check_entry(bc__fatbin_bytes, bc__fatbin_size, t, n - 1, hd, 9, 0, &c),
                     BC_ERR_DIGEST_MISMATCH);
    assert_non_null(strstr(last_message(), "different builds"));
    assert_int_equal(bc__loader_check_entry(bc__fatbin_bytes, bc__fatbin_size, t, n, hd ^ 1, 9, 0, &c),
                     BC_ERR_DIGEST_MISMATCH);
    assert_int_equal(bc__loader_check_entry(bc__fatbin_bytes, bc__fatbin_size, NULL, n, hd, 9, 0, &c),
                     BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(bc__loader_check_entry(bc__fatbin_bytes, bc__fatbin_size, t, n, hd, 7, 5, &c),
                     BC_ERR_UNSUPPORTED_ARCH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_digest_mismatch),
        cmocka_unit_test(test_check_entry_digest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
