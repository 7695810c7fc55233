/* Loading the embedded kernel image: digest, parse, select, load, resolve.
 *
 * Order: the digest is checked first (a damaged blob is reported as damaged,
 * not as whatever the parser makes of it), then the container is parsed and
 * the cubin selected (select.h), then the cubin is handed to the driver in
 * place. Resolving every manifest kernel with cuModuleGetFunction also
 * forces each one to load under CUDA_MODULE_LOADING=LAZY, so every failure
 * happens here, at open. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "digest.h"
#include "driver.h"
#include "error.h"
#include "fatbin.h"
#include "gemm_abi.h"
#include "image.h"
#include "resident_abi.h"
#include "select.h"

/* The embedded blob: loader/embedded_blob.S and build/gen/fatbin_digest.c. */
extern const uint8_t bc__fatbin_bytes[];
extern const uint8_t bc__fatbin_bytes_end[];
extern const size_t bc__fatbin_size;
extern const uint64_t bc__fatbin_digest;

#define MAX_ENTRIES 64
#define LOG_BYTES 4096

static const struct {
    const char *symbol;
    const char *family_name;
    bc__family family;
    int smem;
} manifest[BC__KERNEL_COUNT] = {
#define K(id, sym, fam, smem) [BC_K_##id] = {#sym, #fam, BC__FAM_##fam, (smem)},
#include "manifest.h"
#undef K
};

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* Re-records the failure BC_CU just recorded as `st` (a loader class),
 * keeping its CUresult, unless it is a sticky device fault. */
static bc_status refail(bc_status st, const char *call, const char *what)
{
    bc_error_detail d;
    bc_last_error(&d);
    if (d.status == BC_ERR_DEVICE_LOST)
        return d.status;
    return bc__fail(st, d.cu_result, d.cu_name, call, __FILE__, __LINE__, "%s: %s (%d)", what,
                    d.cu_name[0] ? d.cu_name : "CUresult", d.cu_result);
}

static bc_status check_and_select(const uint8_t *buf, size_t len, uint64_t digest, int cc_major,
                                  int cc_minor, bc__fatbin_entry *out_entry)
{
    uint64_t got = bc__xxh64(buf, len, 0);
    if (got != digest)
        return BC_FAIL(BC_ERR_DIGEST_MISMATCH, "fatbin digest",
                       "the %zu-byte fatbin hashes to XXH64 0x%016llx; the build recorded 0x%016llx", len,
                       (unsigned long long)got, (unsigned long long)digest);
    bc__fatbin_entry entries[MAX_ENTRIES];
    size_t n = 0, sel = 0;
    bc_status st = bc__fatbin_parse(buf, len, entries, MAX_ENTRIES, &n);
    if (st == BC_ERR_INVALID_ARGUMENT)
        return BC_FAIL(BC_ERR_FATBIN_CORRUPT, "fatbin", "more than %d entries: over the loader's limit",
                       MAX_ENTRIES);
    if (st)
        return st;
    st = bc__select_image(entries, n, cc_major, cc_minor, &sel);
    if (st)
        return st;
    *out_entry = entries[sel];
    return BC_OK;
}

static bc_status load_module(const uint8_t *cubin, const char *arch, CUmodule *out_module)
{
    char log[LOG_BYTES];
    log[0] = '\0';
    CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
    CUmodule m = NULL;
    bc_status st = BC_CU(cuModuleLoadDataEx, &m, cubin, 2, opts, vals);
    if (st == BC_OK) {
        *out_module = m;
        return BC_OK;
    }
    log[sizeof log - 1] = '\0';
    bc_error_detail d;
    bc_last_error(&d);
    if (d.status == BC_ERR_DEVICE_LOST)
        return d.status;
    return bc__fail(BC_ERR_MODULE_LOAD, d.cu_result, d.cu_name, "cuModuleLoadDataEx", __FILE__, __LINE__,
                    "the driver refused the %s image: %s (%d); driver log: %s", arch,
                    d.cu_name[0] ? d.cu_name : "CUresult", d.cu_result, log[0] ? log : "(empty)");
}

/* Resolves every manifest kernel of family ALL or `fam` into img->fn and
 * sets the dynamic shared-memory limit of those that use it. */
static bc_status resolve_kernels(bc__image *img, bc__family fam)
{
    for (int i = 0; i < BC__KERNEL_COUNT; i++) {
        if (manifest[i].family != BC__FAM_ALL && (fam == BC__FAM_NONE || manifest[i].family != fam))
            continue;
        bc_status st = BC_CU(cuModuleGetFunction, &img->fn[i], img->module, manifest[i].symbol);
        if (st) {
            bc_error_detail d;
            bc_last_error(&d);
            if (d.cu_result != CUDA_ERROR_NOT_FOUND)
                return st;
            return bc__fail(BC_ERR_MISSING_KERNEL, d.cu_result, d.cu_name, "cuModuleGetFunction", __FILE__,
                            __LINE__, "the %s image lacks kernel %s (manifest family %s)", img->arch,
                            manifest[i].symbol, manifest[i].family_name);
        }
        if (manifest[i].smem <= 0)
            continue;
        st = BC_CU(cuFuncSetAttribute, img->fn[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                   manifest[i].smem);
        if (st) {
            char what[160];
            snprintf(what, sizeof what, "cannot set %s's dynamic shared memory limit to %d bytes",
                     manifest[i].symbol, manifest[i].smem);
            return refail(BC_ERR_MODULE_LOAD, "cuFuncSetAttribute", what);
        }
    }
    return BC_OK;
}

/* Unloads a half-built module on the failure path; if the unload fails
 * too, the first failure stays the one bc_last_error() reports. */
static void keep_first_failure_unload(CUmodule m)
{
    bc_error_detail first;
    bc_last_error(&first);
    if (BC_CU(cuModuleUnload, m) != BC_OK)
        bc__fail(first.status, first.cu_result, first.cu_name, first.call, first.file, first.line, "%s",
                 first.message);
}

bc_status bc__image_load_from(bc__image *img, const uint8_t *buf, size_t len, uint64_t digest, int cc_major,
                              int cc_minor, bc__image_timing *out_timing)
{
    if (img == NULL || (buf == NULL && len != 0))
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__image_load", "img or buf is NULL");
    memset(img, 0, sizeof *img);
    bc__image tmp;
    memset(&tmp, 0, sizeof tmp);
    double t0 = now_us();
    bc__fatbin_entry e;
    bc_status st = check_and_select(buf, len, digest, cc_major, cc_minor, &e);
    if (st)
        goto fail;
    bc__fatbin_arch_name(&e, tmp.arch, sizeof tmp.arch);
    double t1 = now_us();
    st = load_module(buf + e.payload_offset, tmp.arch, &tmp.module);
    if (st)
        goto fail;
    st = resolve_kernels(&tmp, bc__image_family(&e));
    if (st)
        goto fail_unload;
    double t2 = now_us();
    *img = tmp;
    if (out_timing) {
        out_timing->check_us = t1 - t0;
        out_timing->load_us = t2 - t1;
    }
    return BC_OK;

fail_unload:
    keep_first_failure_unload(tmp.module);
fail:
    return st;
}

bc_status bc__image_load(bc__image *img, int cc_major, int cc_minor, bc__image_timing *out_timing)
{
    size_t blob = (size_t)(bc__fatbin_bytes_end - bc__fatbin_bytes);
    if (blob != bc__fatbin_size) {
        if (img)
            memset(img, 0, sizeof *img);
        return BC_FAIL(BC_ERR_DIGEST_MISMATCH, "fatbin digest",
                       "the embedded blob is %zu bytes; the build recorded %zu (stale object?)", blob,
                       bc__fatbin_size);
    }
    return bc__image_load_from(img, bc__fatbin_bytes, bc__fatbin_size, bc__fatbin_digest, cc_major, cc_minor,
                               out_timing);
}

void bc__image_unload(bc__image *img)
{
    if (img == NULL)
        return;
    if (img->module != NULL)
        BC_CU(cuModuleUnload, img->module);
    memset(img, 0, sizeof *img);
}
