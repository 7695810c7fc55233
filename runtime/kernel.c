/* Kernels of a module: resolution, attributes and parameter signature
 * (module.h, bc_kernel_get / bc_kernel_query). */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "module_internal.h"

#define MAX_NAME 4096

static bc_status attr(bc_kernel *k, CUfunction_attribute a, int *out)
{
    return BC_CU(cuFuncGetAttribute, out, a, k->fn);
}

/* The signature through cuFuncGetParamInfo (CUDA 12.4+): index by index
 * until the driver answers CUDA_ERROR_INVALID_VALUE, its documented answer
 * past the last parameter (so that one result is not a failure and is not
 * passed to bc__cu_result, which BC_CU would do). Without the entry point:
 * param_count = -1. */
static bc_status describe_params(bc_kernel *k)
{
    bc_kernel_info *in = &k->info;
    in->param_count = -1;
    if (bc__drv->cuFuncGetParamInfo == NULL)
        return BC_OK;
    for (int i = 0; i <= BC_KERNEL_MAX_PARAMS; i++) {
        size_t off = 0, size = 0;
        CUresult r = bc__drv->cuFuncGetParamInfo(k->fn, (size_t)i, &off, &size);
        if (r == CUDA_ERROR_INVALID_VALUE) {
            in->param_count = i;
            return BC_OK;
        }
        if (r != CUDA_SUCCESS)
            return bc__cu_result(r, "cuFuncGetParamInfo", __FILE__, __LINE__);
        if (i == BC_KERNEL_MAX_PARAMS)
            break;
        if (off > UINT32_MAX || size > UINT32_MAX)
            return BC_FAIL(BC_ERR_INTERNAL, "cuFuncGetParamInfo",
                           "kernel %s: parameter %d at offset %zu, %zu bytes: not plausible", k->name, i, off,
                           size);
        in->param_offset[i] = (uint32_t)off;
        in->param_size[i] = (uint32_t)size;
    }
    return BC_FAIL(BC_ERR_NOT_SUPPORTED, "cuFuncGetParamInfo", "kernel %s takes more than %d parameters",
                   k->name, BC_KERNEL_MAX_PARAMS);
}

/* Attributes once; max_dynamic_smem_bytes is what the device's opt-in
 * leaves after the static shared memory. */
static bc_status describe(bc_kernel *k)
{
    bc_kernel_info *in = &k->info;
    int optin = k->mod->dev->info.smem_per_block_optin;
    bc_status st = attr(k, CU_FUNC_ATTRIBUTE_NUM_REGS, &in->registers);
    if (!st) st = attr(k, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &in->static_smem_bytes);
    if (!st) st = attr(k, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &in->max_threads_per_block);
    if (!st) st = attr(k, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &in->local_bytes);
    if (!st) st = attr(k, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &k->smem_attr);
    if (!st) st = describe_params(k);
    if (st)
        return st;
    in->max_dynamic_smem_bytes = optin > in->static_smem_bytes ? optin - in->static_smem_bytes : 0;
    k->described = 1;
    return BC_OK;
}

bc_status bc__kernel_resolve(bc_module *m, const char *name, int describe_it, bc_kernel **out_kernel)
{
    size_t len = strnlen(name, MAX_NAME);
    if (len == 0 || len == MAX_NAME)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "name", "kernel name is empty or longer than %d bytes",
                       MAX_NAME - 1);
    bc_kernel *k = m->kernels;
    while (k != NULL && strcmp(k->name, name) != 0)
        k = k->next;
    if (k != NULL) {
        bc_status st = describe_it && !k->described ? describe(k) : BC_OK;
        if (!st)
            *out_kernel = k;
        return st;
    }
    CUfunction fn = NULL;
    bc_status st = BC_CU(cuModuleGetFunction, &fn, m->handle, name);
    if (st == BC_ERR_NOT_READY) /* not recorded by BC_CU, and no answer for a lookup */
        return bc__refail(st, BC_ERR_DRIVER, "cuModuleGetFunction", "the driver did not resolve the kernel");
    if (st) {
        bc_error_detail d;
        bc_last_error(&d); /* what BC_CU recorded for st */
        if (st != BC_ERR_DRIVER || d.cu_result != CUDA_ERROR_NOT_FOUND)
            return st;
        return bc__fail(BC_ERR_MISSING_KERNEL, d.cu_result, d.cu_name, "cuModuleGetFunction", __FILE__, __LINE__,
                        "the %s image has no kernel named %s", m->arch, name);
    }
    k = calloc(1, sizeof *k + len + 1);
    if (k == NULL)
        return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "calloc", "cannot allocate kernel %s", name);
    memcpy(k->name, name, len + 1);
    k->mod = m;
    k->fn = fn;
    k->info.name = k->name;
    k->info.param_count = -1;
    if (describe_it && (st = describe(k)) != BC_OK) {
        free(k);
        return st;
    }
    k->next = m->kernels;
    m->kernels = k;
    m->info.kernels_resolved++;
    *out_kernel = k;
    return BC_OK;
}

bc_status bc_kernel_get(bc_module *mod, const char *name, bc_kernel **out_kernel)
{
    if (mod == NULL || name == NULL || out_kernel == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_kernel_get", "mod, name or out_kernel is NULL");
    if (bc__dev_lost(mod->dev))
        return BC_LOST_FAIL("bc_kernel_get");
    return bc__kernel_resolve(mod, name, 1, out_kernel);
}

bc_status bc_kernel_query(const bc_kernel *kernel, bc_kernel_info *out_info)
{
    if (kernel == NULL || out_info == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_kernel_query", "kernel or out_info is NULL");
    if (!kernel->described)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_kernel_query", "kernel %s was not resolved by bc_kernel_get",
                       kernel->name);
    *out_info = kernel->info;
    return BC_OK;
}
