/* Kernel plans: every check of a user kernel's launch happens here, once
 * (module.h, bc_kernel_plan_create), so that bc_kernel_launch is one
 * cuLaunchKernelEx over a parameter block packed at plan time.
 *
 * Grid and block limits are the CUDA limits common to every device barecuda
 * runs on (compute capability >= 5.0: grid x < 2^31, y and z <= 65535;
 * block x and y <= 1024, z <= 64, at most 1024 threads); the kernel's own
 * limits come from the driver (kernel.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "ptrcheck.h"
#include "module_internal.h"

#define GRID_X_MAX 0x7fffffffu
#define GRID_YZ_MAX 65535u
#define BLOCK_XY_MAX 1024u
#define BLOCK_Z_MAX 64u
#define CLUSTER_PORTABLE 8u  /* CTAs per cluster any cluster-capable device schedules */
#define CLUSTER_MAX 16u      /* with the non-portable attribute (Hopper) */
#define PARAM_BYTES_MAX 32764u /* the kernel parameter space (CUDA 12.1+, Volta+) */

static uint32_t one(uint32_t v) { return v ? v : 1u; }

static bc_status check_grid_block(const bc_kernel *k, const uint32_t g[3], const uint32_t b[3])
{
    if (g[0] > GRID_X_MAX || g[1] > GRID_YZ_MAX || g[2] > GRID_YZ_MAX)
        return BC_FAIL(BC_ERR_LAUNCH_CONFIG, "grid",
                       "kernel %s: grid {%u, %u, %u}: x must be at most 2^31-1, y and z at most 65535", k->name,
                       g[0], g[1], g[2]);
    if (b[0] > BLOCK_XY_MAX || b[1] > BLOCK_XY_MAX || b[2] > BLOCK_Z_MAX)
        return BC_FAIL(BC_ERR_LAUNCH_CONFIG, "block",
                       "kernel %s: block {%u, %u, %u}: x and y must be at most 1024, z at most 64", k->name, b[0],
                       b[1], b[2]);
    uint64_t threads = (uint64_t)b[0] * b[1] * b[2];
    if (threads > (uint64_t)k->info.max_threads_per_block)
        return BC_FAIL(BC_ERR_LAUNCH_CONFIG, "block",
                       "kernel %s: block {%u, %u, %u} is %llu threads, over the kernel's limit of %d per block "
                       "(its registers decide it)",
                       k->name, b[0], b[1], b[2], (unsigned long long)threads, k->info.max_threads_per_block);
    return BC_OK;
}

static bc_status check_smem(const bc_kernel *k, uint32_t dyn)
{
    const int optin = k->mod->dev->info.smem_per_block_optin;
    if ((uint64_t)dyn > (uint64_t)k->info.max_dynamic_smem_bytes)
        return BC_FAIL(BC_ERR_LAUNCH_CONFIG, "dynamic_smem_bytes",
                       "kernel %s: %u bytes of dynamic shared memory + %d static exceed the device's %d-byte "
                       "limit per block",
                       k->name, dyn, k->info.static_smem_bytes, optin);
    return BC_OK;
}

/* *out_size = CTAs per cluster, 1 for none. */
static bc_status check_cluster_shape(const bc_kernel *k, const uint32_t g[3], const uint32_t c[3],
                                     uint32_t *out_size)
{
    *out_size = 1;
    if (c[0] == 1 && c[1] == 1 && c[2] == 1)
        return BC_OK;
    if (k->mod->dev->info.cc_major < 9)
        return BC_FAIL(BC_ERR_CLUSTER, "cluster", "kernel %s: the device (compute capability %d.%d) has no "
                       "thread-block clusters", k->name, k->mod->dev->info.cc_major, k->mod->dev->info.cc_minor);
    for (int i = 0; i < 3; i++) /* each side first: three 32-bit sides' product can wrap 64 bits (to 1) */
        if (c[i] > CLUSTER_MAX)
            return BC_FAIL(BC_ERR_CLUSTER, "cluster", "kernel %s: cluster {%u, %u, %u} is over %u CTAs in dimension %c",
                           k->name, c[0], c[1], c[2], CLUSTER_MAX, "xyz"[i]);
    const uint64_t size = (uint64_t)c[0] * c[1] * c[2];
    if (size > CLUSTER_MAX)
        return BC_FAIL(BC_ERR_CLUSTER, "cluster", "kernel %s: cluster {%u, %u, %u} is %llu CTAs, over %u", k->name,
                       c[0], c[1], c[2], (unsigned long long)size, CLUSTER_MAX);
    for (int i = 0; i < 3; i++)
        if (g[i] % c[i] != 0)
            return BC_FAIL(BC_ERR_CLUSTER, "cluster",
                           "kernel %s: grid {%u, %u, %u} is not a multiple of cluster {%u, %u, %u} in dimension %c",
                           k->name, g[0], g[1], g[2], c[0], c[1], c[2], "xyz"[i]);
    *out_size = (uint32_t)size;
    return BC_OK;
}

/* A parameter that declares the bytes its kernel reaches (extent_bytes >
 * 0): a device pointer (8 bytes), not NULL, whose whole extent is memory
 * this device's kernels may read and write, as for a GEMM operand
 * (ptrcheck.h: inside one live pool block, a registered range, or a driver
 * allocation this context can address). */
static bc_status check_buffer_param(const bc_kernel *k, int index, const void *value, uint32_t size,
                                    uint64_t extent)
{
    if (extent == 0)
        return BC_OK;
    if (size != sizeof(bc_devptr))
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "params", "kernel %s: parameter %d declares %llu extent bytes but "
                       "is %u bytes, not a device pointer", k->name, index, (unsigned long long)extent, size);
    bc_devptr p;
    memcpy(&p, value, sizeof p);
    if (p == 0)
        return BC_FAIL(BC_ERR_NULL_POINTER, "params", "kernel %s: parameter %d is a NULL device pointer with a "
                       "%llu-byte extent", k->name, index, (unsigned long long)extent);
    if (extent > UINT64_MAX - p)
        return BC_FAIL(BC_ERR_OUT_OF_BOUNDS, "params", "kernel %s: parameter %d: %llu bytes from 0x%llx wrap the "
                       "address space", k->name, index, (unsigned long long)extent, (unsigned long long)p);
    /* bc_error_detail.call keeps the pointer: the names must be static */
#define P10(t) "parameter " #t "0", "parameter " #t "1", "parameter " #t "2", "parameter " #t "3", \
    "parameter " #t "4", "parameter " #t "5", "parameter " #t "6", "parameter " #t "7", "parameter " #t "8", \
    "parameter " #t "9"
    static const char *const names[] = {"parameter 0", "parameter 1", "parameter 2", "parameter 3",
                                        "parameter 4", "parameter 5", "parameter 6", "parameter 7",
                                        "parameter 8", "parameter 9", P10(1), P10(2), P10(3), P10(4), P10(5),
                                        "parameter 60", "parameter 61", "parameter 62", "parameter 63"};
#undef P10
    _Static_assert(sizeof names / sizeof names[0] == BC_KERNEL_MAX_PARAMS, "a name per parameter");
    return bc__ptr_check(k->mod->dev, names[index], p, extent, BC__ACC_READ | BC__ACC_WRITE, NULL);
}

/* Checks the parameters against the signature and lays them out:
 * off[i] is the kernel's own offset when known, else the next 8-byte
 * boundary. *out_bytes is the size of the packed block. */
static bc_status layout_params(const bc_kernel *k, const bc_kernel_plan_desc *d, uint32_t off[], size_t *out_bytes)
{
    const bc_kernel_info *in = &k->info;
    if (d->param_count < 0 || d->param_count > BC_KERNEL_MAX_PARAMS || (d->param_count > 0 && d->params == NULL))
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "params", "param_count %d outside [0, %d] or params is NULL",
                       d->param_count, BC_KERNEL_MAX_PARAMS);
    const int checked = in->param_count >= 0;
    if (!checked && !d->unchecked_params)
        return BC_FAIL(BC_ERR_NOT_SUPPORTED, "cuFuncGetParamInfo",
                       "kernel %s: this driver cannot report kernel parameter signatures (CUDA 12.4 or newer "
                       "can); set unchecked_params to launch without the check", k->name);
    if (checked && d->param_count != in->param_count)
        return BC_FAIL(BC_ERR_PARAM_MISMATCH, "params", "kernel %s takes %d parameter%s; %d given", k->name,
                       in->param_count, in->param_count == 1 ? "" : "s", d->param_count);
    uint64_t end = 0;
    for (int i = 0; i < d->param_count; i++) {
        const bc_kernel_param *p = &d->params[i];
        if (p->value == NULL || p->size == 0)
            return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "params", "kernel %s: parameter %d has no value or size 0",
                           k->name, i);
        if (checked && p->size != in->param_size[i])
            return BC_FAIL(BC_ERR_PARAM_MISMATCH, "params",
                           "kernel %s: parameter %d is %u bytes; %u given", k->name, i, in->param_size[i], p->size);
        bc_status st = check_buffer_param(k, i, p->value, p->size, p->extent_bytes);
        if (st)
            return st;
        uint64_t at = checked ? in->param_offset[i] : (end + 7u) & ~(uint64_t)7u;
        if (at + p->size > PARAM_BYTES_MAX)
            return BC_FAIL(BC_ERR_PARAM_MISMATCH, "params", "kernel %s: parameters reach byte %llu, over the "
                           "%u-byte parameter space", k->name, (unsigned long long)(at + p->size), PARAM_BYTES_MAX);
        off[i] = (uint32_t)at;
        if (at + p->size > end)
            end = at + p->size;
    }
    *out_bytes = (size_t)end;
    return BC_OK;
}

/* The kernel attributes the plan needs: the dynamic shared-memory limit
 * (raised, never lowered: other plans may use more) and, for clusters of
 * more than 8 CTAs, the non-portable size. */
static bc_status set_attributes(bc_kernel *k, uint32_t dyn, uint32_t cluster_size)
{
    char what[200];
    bc_status st;
    if ((int)dyn > k->smem_attr) {
        if ((st = BC_CU(cuFuncSetAttribute, k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)dyn))) {
            snprintf(what, sizeof what, "kernel %s: the driver refused %u bytes of dynamic shared memory", k->name,
                     dyn);
            return bc__refail(st, BC_ERR_LAUNCH_CONFIG, "cuFuncSetAttribute", what);
        }
        k->smem_attr = (int)dyn;
    }
    if (cluster_size > CLUSTER_PORTABLE && !k->nonportable) {
        if ((st = BC_CU(cuFuncSetAttribute, k->fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1))) {
            snprintf(what, sizeof what, "kernel %s: the driver refused clusters of %u CTAs", k->name, cluster_size);
            return bc__refail(st, BC_ERR_CLUSTER, "cuFuncSetAttribute", what);
        }
        k->nonportable = 1;
    }
    return BC_OK;
}

/* A cluster launch must fit the device at least once. The query sees the
 * launch's shape and its cluster attribute only. */
static bc_status check_schedulable(const bc_kernel *k, const CUlaunchConfig *launch, uint32_t cluster_size)
{
    if (cluster_size <= 1)
        return BC_OK;
    CUlaunchConfig q = *launch;
    q.attrs = &launch->attrs[launch->numAttrs - 1]; /* fill_launch puts the cluster last */
    q.numAttrs = 1;
    const CUlaunchConfig *lc = &q;
    int n = 0;
    const bc_status st = BC_CU(cuOccupancyMaxActiveClusters, &n, k->fn, lc);
    if (st == BC_ERR_DRIVER) {
        bc_error_detail d;
        bc_last_error(&d); /* what BC_CU recorded */
        if (d.cu_result != CUDA_ERROR_INVALID_CLUSTER_SIZE)
            return st;
        return bc__refail(st, BC_ERR_CLUSTER, "cuOccupancyMaxActiveClusters", "the driver refused the cluster size");
    }
    if (st == BC_ERR_NOT_READY) /* an answer BC_CU does not record */
        return bc__refail(st, BC_ERR_DRIVER, "cuOccupancyMaxActiveClusters",
                          "the driver did not answer the cluster query");
    if (st) /* lost */
        return st;
    if (n < 1)
        return BC_FAIL(BC_ERR_CLUSTER, "cuOccupancyMaxActiveClusters",
                       "kernel %s: a cluster of %u CTAs of %u threads with %u + %d bytes of shared memory each "
                       "cannot be scheduled on this device",
                       k->name, cluster_size, lc->blockDimX * lc->blockDimY * lc->blockDimZ, lc->sharedMemBytes,
                       k->info.static_smem_bytes);
    return BC_OK;
}

static void fill_launch(bc_kernel_plan *p, const uint32_t g[3], const uint32_t b[3], const uint32_t c[3],
                        uint32_t dyn, int programmatic, uint32_t cluster_size)
{
    CUlaunchConfig *lc = &p->launch;
    memset(lc, 0, sizeof *lc);
    lc->gridDimX = g[0], lc->gridDimY = g[1], lc->gridDimZ = g[2];
    lc->blockDimX = b[0], lc->blockDimY = b[1], lc->blockDimZ = b[2];
    lc->sharedMemBytes = dyn;
    lc->attrs = p->attrs;
    if (programmatic) {
        CUlaunchAttribute *a = &p->attrs[lc->numAttrs++];
        a->id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        a->value.programmaticStreamSerializationAllowed = 1;
    }
    if (cluster_size > 1) {
        CUlaunchAttribute *a = &p->attrs[lc->numAttrs++];
        a->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        a->value.clusterDim.x = c[0], a->value.clusterDim.y = c[1], a->value.clusterDim.z = c[2];
    }
}

static bc_kernel_plan *plan_alloc(size_t param_bytes)
{
    unsigned char *raw = calloc(1, sizeof(bc_kernel_plan) + 64 + param_bytes);
    if (raw == NULL)
        return NULL;
    bc_kernel_plan *p = (bc_kernel_plan *)raw;
    uintptr_t at = ((uintptr_t)(raw + sizeof *p) + 63u) & ~(uintptr_t)63u;
    p->params = (unsigned char *)at;
    p->param_bytes = param_bytes;
    return p;
}

bc_status bc_kernel_plan_create(bc_kernel *kernel, const bc_kernel_plan_desc *desc, bc_kernel_plan **out_plan)
{
    if (kernel == NULL || desc == NULL || out_plan == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_kernel_plan_create", "kernel, desc or out_plan is NULL");
    if (!kernel->described)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_kernel_plan_create",
                       "kernel %s was not resolved by bc_kernel_get", kernel->name);
    if (bc__dev_lost(kernel->mod->dev))
        return BC_LOST_FAIL("bc_kernel_plan_create");
    const uint32_t g[3] = {one(desc->grid[0]), one(desc->grid[1]), one(desc->grid[2])};
    const uint32_t b[3] = {one(desc->block[0]), one(desc->block[1]), one(desc->block[2])};
    const uint32_t c[3] = {one(desc->cluster[0]), one(desc->cluster[1]), one(desc->cluster[2])};
    uint32_t off[BC_KERNEL_MAX_PARAMS], cluster_size = 1;
    size_t bytes = 0;
    bc_status st = check_grid_block(kernel, g, b);
    if (!st) st = check_smem(kernel, desc->dynamic_smem_bytes);
    if (!st) st = check_cluster_shape(kernel, g, c, &cluster_size);
    if (!st) st = layout_params(kernel, desc, off, &bytes);
    if (st)
        return st;
    bc_kernel_plan *p = plan_alloc(bytes);
    if (p == NULL)
        return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "calloc", "cannot allocate a kernel plan");
    fill_launch(p, g, b, c, desc->dynamic_smem_bytes, desc->programmatic != 0, cluster_size);
    st = set_attributes(kernel, desc->dynamic_smem_bytes, cluster_size);
    if (!st) st = check_schedulable(kernel, &p->launch, cluster_size);
    if (st) {
        free(p);
        return st;
    }
    p->dev = kernel->mod->dev;
    p->kernel = kernel;
    p->param_count = desc->param_count;
    for (int i = 0; i < desc->param_count; i++) {
        p->size[i] = desc->params[i].size;
        p->offset[i] = off[i];
        p->extent[i] = desc->params[i].extent_bytes;
        p->args[i] = p->params + off[i];
        memcpy(p->args[i], desc->params[i].value, desc->params[i].size);
    }
    kernel->mod->uses++;
    bc__list_push(&p->dev->kernel_plans, &p->link);
    *out_plan = p;
    return BC_OK;
}

bc_status bc_kernel_plan_set_param(bc_kernel_plan *plan, int index, const void *value, uint32_t size)
{
    if (plan == NULL || value == NULL || index < 0 || index >= plan->param_count)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_kernel_plan_set_param",
                       "plan or value is NULL, or index %d outside [0, %d)", index, plan ? plan->param_count : 0);
    if (size != plan->size[index])
        return BC_FAIL(BC_ERR_PARAM_MISMATCH, "params", "kernel %s: parameter %d is %u bytes; %u given",
                       plan->kernel->name, index, plan->size[index], size);
    if (bc__dev_lost(plan->dev))
        return BC_LOST_FAIL("bc_kernel_plan_set_param");
    bc_status st = check_buffer_param(plan->kernel, index, value, size, plan->extent[index]);
    if (st)
        return st;
    memcpy(plan->args[index], value, size);
    return BC_OK;
}

bc_status bc_kernel_launch(const bc_kernel_plan *plan, bc_stream *stream)
{
    if (plan == NULL || stream == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_kernel_launch", "plan or stream is NULL");
    if (BC_STREAM_ON(stream, plan->dev, "the plan"))
        return BC_ERR_INVALID_ARGUMENT;
    CUlaunchConfig lc = plan->launch;
    lc.hStream = stream->handle;
    return BC_CU(cuLaunchKernelEx, &lc, plan->kernel->fn, (void **)plan->args, NULL);
}

void bc_kernel_plan_destroy(bc_kernel_plan *plan)
{
    if (plan == NULL)
        return;
    plan->kernel->mod->uses--;
    bc__list_remove(&plan->link);
    free(plan);
}

void bc__kernel_plan_release(bc__link *node) { bc_kernel_plan_destroy((bc_kernel_plan *)node); }
