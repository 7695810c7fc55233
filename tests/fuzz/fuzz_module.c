/* libFuzzer harness for the module loader's file path: the bytes of a file
 * through the file reader, the pure checks (digest, container or plain
 * cubin, selection, JIT choice) for several devices, and bc_module_load on
 * the fake driver.
 *
 * Whatever the bytes: the file reader returns them unchanged; the check
 * returns a documented status and, on BC_OK, an entry inside the input of
 * the kind promised (an uncompressed cubin, or PTX only when JIT was
 * allowed, a plain cubin covering the whole input); a right digest never
 * changes the verdict and a wrong one is BC_ERR_DIGEST_MISMATCH; a load on
 * the fake driver agrees with the check, and after unload and close the
 * fake holds nothing. A broken promise aborts (a finding).
 *
 * Build: ninja fuzz; replay the corpus: ninja fuzz-replay. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "barecuda.h"
#include "check.h"
#include "fake_driver.h"
#include "file.h"

#define CHECK(cond)                                                                               \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "fuzz_module: broken promise: %s (line %d)\n", #cond, __LINE__);     \
            abort();                                                                              \
        }                                                                                         \
    } while (0)

static const int ccs[][2] = {{7, 5}, {8, 0}, {8, 6}, {9, 0}, {10, 0}, {10, 3}, {12, 0}};

/* The input as a file: written to a memfd, read back by path. */
static void through_file(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz_module", MFD_CLOEXEC);
    CHECK(fd >= 0);
    CHECK(size == 0 || write(fd, data, size) == (ssize_t)size);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    uint8_t *buf = NULL;
    size_t len = 0;
    CHECK(bc__read_file(path, size + 1, &buf, &len) == BC_OK);
    CHECK(len == size && (size == 0 || memcmp(buf, data, size) == 0));
    free(buf);
    if (size > 0)
        CHECK(bc__read_file(path, size - 1, &buf, &len) == BC_ERR_FILE_TOO_LARGE);
    close(fd);
}

static void check_choice(const uint8_t *data, size_t size, int jit, const bc__loader_choice *c)
{
    const bc__fatbin_entry *e = &c->entry;
    CHECK(e->payload_offset <= size && e->payload_size <= size - e->payload_offset && e->payload_size > 0);
    CHECK(e->compression == BC__FATBIN_UNCOMPRESSED);
    CHECK(c->entries >= 1 && c->entries <= BC__LOADER_MAX_ENTRIES);
    if (c->plain_cubin)
        CHECK(e->payload_offset == 0 && e->payload_size == size && c->entries == 1 && !c->jit);
    if (c->jit)
        CHECK(jit && e->kind == BC__FATBIN_KIND_PTX);
    else
        CHECK(e->kind == BC__FATBIN_KIND_ELF);
    CHECK(strlen(c->arch) >= 4);
    (void)data;
}

/* Returns the verdicts for cc 9.0 without JIT and 12.0 with it (the fake
 * devices'), with their choices. */
static void checks(const uint8_t *data, size_t size, bc_status *st90, bc__loader_choice *out90, bc_status *st120j,
                   bc__loader_choice *out120j)
{
    for (size_t i = 0; i < sizeof ccs / sizeof ccs[0]; i++) {
        for (int jit = 0; jit <= 1; jit++) {
            bc__loader_choice c, d;
            bc_status st = bc__loader_check(data, size, NULL, ccs[i][0], ccs[i][1], jit, &c);
            CHECK(st == BC_OK || st == BC_ERR_FATBIN_CORRUPT || st == BC_ERR_UNSUPPORTED_ARCH ||
                  st == BC_ERR_FATBIN_COMPRESSED);
            if (st == BC_OK) {
                check_choice(data, size, jit, &c);
                const uint64_t right = c.digest, wrong = c.digest ^ 1;
                CHECK(bc__loader_check(data, size, &right, ccs[i][0], ccs[i][1], jit, &d) == BC_OK);
                CHECK(memcmp(&c, &d, sizeof c) == 0);
                CHECK(bc__loader_check(data, size, &wrong, ccs[i][0], ccs[i][1], jit, &d) == BC_ERR_DIGEST_MISMATCH);
                if (!jit && !c.jit && c.entries >= 1 && c.entries <= BC__LOADER_MAX_ENTRIES) {
                    /* the per-entry check on the same bytes with a table that is all wrong: refused, never a
                     * read outside the buffer (the digests of a container's headers or of a cubin come
                     * first), and *out untouched */
                    static const uint64_t zeros[BC__LOADER_MAX_ENTRIES];
                    memset(&d, 0xAB, sizeof d);
                    bc_status se = bc__loader_check_entry(data, size, zeros, (size_t)c.entries, 0, ccs[i][0],
                                                          ccs[i][1], &d);
                    CHECK(se != BC_OK && d.entries == (int)0xABABABAB);
                }
            }
            if (ccs[i][0] == 9 && !jit)
                *st90 = st, *out90 = c;
            if (ccs[i][0] == 12 && jit)
                *st120j = st, *out120j = c;
        }
    }
}

/* bc_module_load on the fake driver (a device of cc major.minor), which
 * agrees with the check. */
static void through_fake(const uint8_t *data, size_t size, int major, int minor, int jit, bc_status want,
                         const bc__loader_choice *c)
{
    fake_install();
    fake_device fd;
    fake_device_defaults(&fd);
    fd.cc_major = major, fd.cc_minor = minor;
    fake_set_devices(&fd, 1);
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    cfg.skip_kernel_load = 1;
    cfg.device_arena_bytes = cfg.host_arena_bytes = 0;
    bc_device *dev = NULL;
    CHECK(bc_device_open(&cfg, &dev) == BC_OK);
    /* the fake is told the image's size instead of parsing bytes it cannot trust: a
     * cubin's, or the PTX text up to its NUL (barecuda's copy has one after the payload) */
    const uint8_t *payload = data + c->entry.payload_offset;
    if (want == BC_OK)
        fake_set_next_image_size(!jit ? c->entry.payload_size : strnlen((const char *)payload, c->entry.payload_size) + 1);
    const char *names[] = {"k"};
    bc_module_options o;
    bc_module_options_default(&o);
    o.allow_ptx_jit = jit;
    o.kernels = names;
    o.kernel_count = size % 2; /* half the inputs also resolve a kernel named "k" */
    bc_module *m = NULL;
    bc_status st = bc_module_load(dev, data, size, &o, &m);
    if (want != BC_OK)
        CHECK(st == want && m == NULL);
    else
        CHECK(st == BC_OK || (st == BC_ERR_MISSING_KERNEL && o.kernel_count == 1) ||
              st == BC_ERR_DRIVER_TOO_OLD); /* the load, not the check, weighs the cubin against the driver */
    if (m != NULL) {
        bc_module_info info;
        CHECK(bc_module_query(m, &info) == BC_OK && info.image_bytes == c->entry.payload_size);
        CHECK(info.jit == c->jit && strcmp(info.arch, c->arch) == 0);
        CHECK(bc_module_unload(m) == BC_OK);
    }
    bc_device_close(dev);
    CHECK(fake_live_objects() == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    through_file(data, size);
    bc__loader_choice c90, c120;
    bc_status st90 = BC_ERR_INTERNAL, st120 = BC_ERR_INTERNAL;
    memset(&c90, 0, sizeof c90);
    memset(&c120, 0, sizeof c120);
    checks(data, size, &st90, &c90, &st120, &c120);
    through_fake(data, size, 9, 0, 0, st90, &c90);
    through_fake(data, size, 12, 0, 1, st120, &c120);
    return 0;
}
