/* Modules: the driver side of loading any fatbin or cubin (module.h). The
 * checks before the driver are loader/check.c's; this file copies the
 * selected image, hands it to cuModuleLoadDataEx with an error-log buffer
 * and resolves the kernels the caller named, so that every failure happens
 * at load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubin.h"
#include "error.h"
#include "file.h"
#include "module_internal.h"

#define LOG_BYTES 4096
#define MAX_EAGER_KERNELS 4096

bc_status bc__refail(bc_status got, bc_status st, const char *call, const char *what)
{
    if (got == BC_ERR_DEVICE_LOST)
        return got;
    if (got == BC_ERR_NOT_READY) /* BC_CU records nothing for it (a poll's answer, here from no poll) */
        return bc__fail(st, CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", call, __FILE__, __LINE__,
                        "%s: CUDA_ERROR_NOT_READY (%d)", what, CUDA_ERROR_NOT_READY);
    bc_error_detail d;
    bc_last_error(&d); /* what BC_CU recorded for `got` */
    return bc__fail(st, d.cu_result, d.cu_name, call, __FILE__, __LINE__, "%s: %s (%d)", what,
                    d.cu_name[0] ? d.cu_name : "CUresult", d.cu_result);
}

bc_status bc_module_options_default(bc_module_options *out_opts)
{
    if (out_opts == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_module_options_default", "out_opts is NULL");
    memset(out_opts, 0, sizeof *out_opts);
    out_opts->max_file_bytes = BC_MODULE_DEFAULT_MAX_FILE_BYTES;
    return BC_OK;
}

/* cuModuleLoadDataEx with the driver's error log; a refusal is
 * BC_ERR_MODULE_LOAD carrying the log (a sticky fault stays DEVICE_LOST). */
static bc_status driver_load(const void *image, const char *arch, int jit, CUmodule *out_module)
{
    char log[LOG_BYTES];
    log[0] = '\0';
    CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
    CUmodule m = NULL;
    bc_status st = BC_CU(cuModuleLoadDataEx, &m, image, 2, opts, vals);
    if (st == BC_OK) {
        *out_module = m;
        return BC_OK;
    }
    log[sizeof log - 1] = '\0';
    if (st == BC_ERR_DEVICE_LOST)
        return st;
    bc_error_detail d;
    bc_last_error(&d); /* what BC_CU recorded for st */
    if (st == BC_ERR_NOT_READY) /* BC_CU records nothing for it */
        d.cu_result = CUDA_ERROR_NOT_READY, d.cu_name = "CUDA_ERROR_NOT_READY";
    return bc__fail(BC_ERR_MODULE_LOAD, d.cu_result, d.cu_name, "cuModuleLoadDataEx", __FILE__, __LINE__,
                    "the driver refused the %s image%s: %s (%d); driver log: %s", arch,
                    jit ? " (PTX, JIT)" : "", d.cu_name[0] ? d.cu_name : "CUresult", d.cu_result,
                    log[0] ? log : "(empty)");
}

/* Our copy of the selected entry; PTX text gets a NUL after it. */
static bc_status copy_image(const uint8_t *bytes, const bc__loader_choice *c, void **out_copy)
{
    size_t n = c->entry.payload_size;
    unsigned char *p = malloc(n + 1);
    if (p == NULL)
        return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "malloc", "cannot copy the %zu-byte %s image", n, c->arch);
    memcpy(p, bytes + c->entry.payload_offset, n);
    p[n] = '\0';
    *out_copy = p;
    return BC_OK;
}

static bc_status check_args(const bc_device *dev, const bc__module_args *a)
{
    if (dev == NULL || a == NULL || (a->bytes == NULL && a->len != 0))
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_module_load", "dev is NULL, or bytes is NULL with len %zu",
                       a ? a->len : 0);
    if (a->kernel_count < 0 || a->kernel_count > MAX_EAGER_KERNELS || (a->kernel_count > 0 && a->kernels == NULL))
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "kernels", "kernel_count %d outside [0, %d] or kernels is NULL",
                       a->kernel_count, MAX_EAGER_KERNELS);
    for (int i = 0; i < a->kernel_count; i++)
        if (a->kernels[i] == NULL || a->kernels[i][0] == '\0')
            return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "kernels", "kernel name %d is NULL or empty", i);
    if (bc__dev_lost(dev))
        return BC_LOST_FAIL("bc_module_load");
    return BC_OK;
}

bc_status bc__module_load(bc_device *dev, const bc__module_args *a, bc_module **out_mod, double *check_us,
                          double *load_us)
{
    bc_status st = check_args(dev, a);
    if (st)
        return st;
    double t0 = bc__now_us();
    bc__loader_choice c;
    st = a->entry_digests ? bc__loader_check_entry(a->bytes, a->len, a->entry_digests, a->entry_count,
                                                   a->headers_digest, dev->info.cc_major, dev->info.cc_minor, &c)
                          : bc__loader_check(a->bytes, a->len, a->digest, dev->info.cc_major, dev->info.cc_minor,
                                             a->allow_ptx_jit, &c);
    if (st)
        return st;
    if (!c.jit) { /* the cubin's own toolkit and arch (read by the check) decide the oldest driver that loads it */
        st = bc__cubin_req_check(&c.req, c.arch, bc__driver_version());
        if (st)
            return st;
    }
    double t1 = bc__now_us();
    bc_module *m = calloc(1, sizeof *m);
    if (m == NULL)
        return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "calloc", "cannot allocate a module");
    bc__list_init(&m->link);
    m->dev = dev;
    m->entry = c.entry;
    snprintf(m->arch, sizeof m->arch, "%s", c.arch);
    const void *image = a->bytes + c.entry.payload_offset;
    if (!a->borrow || c.jit) {
        st = copy_image(a->bytes, &c, &m->copy);
        if (st)
            goto fail_free;
        image = m->copy;
    }
    st = driver_load(image, m->arch, c.jit, &m->handle);
    if (st)
        goto fail_free;
    for (int i = 0; i < a->kernel_count && st == BC_OK; i++) {
        bc_kernel *k = NULL;
        st = bc__kernel_resolve(m, a->kernels[i], 1, &k);
    }
    if (st)
        goto fail_unload;
    m->info.arch = m->arch;
    m->info.jit = c.jit;
    m->info.digest = c.digest;
    m->info.image_bytes = c.entry.payload_size;
    m->info.entries = c.entries;
    if (check_us)
        *check_us = t1 - t0;
    if (load_us)
        *load_us = bc__now_us() - t1;
    *out_mod = m;
    return BC_OK;

fail_unload:
    bc__module_free(m); /* frees the kernels, the copy and m */
    return st;
fail_free:
    free(m->copy);
    free(m);
    return st;
}

void bc__module_free(bc_module *m)
{
    if (m == NULL)
        return;
    while (m->kernels) {
        bc_kernel *k = m->kernels;
        m->kernels = k->next;
        free(k);
    }
    if (m->handle != NULL)
        BC_CU_CLEANUP(cuModuleUnload, m->handle);
    bc__list_remove(&m->link);
    free(m->copy);
    free(m);
}

bc_status bc_module_load(bc_device *dev, const void *bytes, size_t len, const bc_module_options *opts,
                         bc_module **out_mod)
{
    bc_module_options defaults;
    bc_module_options_default(&defaults);
    if (opts == NULL)
        opts = &defaults;
    if (out_mod == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_module_load", "out_mod is NULL");
    const bc__module_args a = {
        .bytes = bytes,
        .len = len,
        .digest = opts->check_digest ? &opts->expected_digest : NULL,
        .kernels = opts->kernels,
        .kernel_count = opts->kernel_count,
        .allow_ptx_jit = opts->allow_ptx_jit != 0,
    };
    bc_module *m = NULL;
    bc_status st = bc__module_load(dev, &a, &m, NULL, NULL);
    if (st)
        return st;
    bc__list_push(&dev->modules, &m->link);
    *out_mod = m;
    return BC_OK;
}

bc_status bc_module_load_file(bc_device *dev, const char *path, const bc_module_options *opts,
                              bc_module **out_mod)
{
    if (dev == NULL || path == NULL || out_mod == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_module_load_file", "dev, path or out_mod is NULL");
    size_t limit = opts && opts->max_file_bytes ? opts->max_file_bytes : BC_MODULE_DEFAULT_MAX_FILE_BYTES;
    uint8_t *buf = NULL;
    size_t len = 0;
    bc_status st = bc__read_file(path, limit, &buf, &len);
    if (st)
        return st;
    st = bc_module_load(dev, buf, len, opts, out_mod);
    free(buf); /* the module keeps its own copy of the selected image */
    return st;
}

bc_status bc_module_unload(bc_module *mod)
{
    if (mod == NULL)
        return BC_OK;
    if (mod->uses > 0)
        return BC_FAIL(BC_ERR_IN_USE, "bc_module_unload",
                       "the %s module is used by %d kernel plan(s) or graph node(s): destroy those first",
                       mod->arch, mod->uses);
    bc__module_free(mod);
    return BC_OK;
}

bc_status bc_module_query(const bc_module *mod, bc_module_info *out_info)
{
    if (mod == NULL || out_info == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_module_query", "mod or out_info is NULL");
    *out_info = mod->info;
    return BC_OK;
}

/* bc_device_close: after graphs and plans, so no use is left. */
void bc__module_release(bc__link *node) { bc__module_free((bc_module *)node); }

void bc__module_forget(bc_module *m)
{
    if (m == NULL)
        return;
    m->handle = NULL; /* left loaded: the context it lives in is abandoned */
    bc__module_free(m);
}
