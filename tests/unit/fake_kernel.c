/* Fake driver: kernel parameter signatures (cuFuncGetParamInfo) and cluster
 * occupancy (cuOccupancyMaxActiveClusters), with their controls. */
#include <stdio.h>
#include <string.h>

#include "fake_internal.h"

void fake_set_kernel_params(const char *kernel, int count, const size_t *offsets, const size_t *sizes)
{
    fake__lock();
    fake_kernel_sig *s = NULL;
    for (int i = 0; i < fake__s.nsigs && s == NULL; i++)
        if (!strcmp(fake__s.sigs[i].kernel, kernel))
            s = &fake__s.sigs[i];
    if (s == NULL && fake__s.nsigs < FAKE_MAX_KERNEL_SIGS)
        s = &fake__s.sigs[fake__s.nsigs++];
    if (s != NULL && count >= 0 && count <= FAKE_MAX_PARAMS) {
        snprintf(s->kernel, sizeof s->kernel, "%s", kernel);
        s->count = count;
        for (int i = 0; i < count; i++) {
            s->offset[i] = offsets[i];
            s->size[i] = sizes[i];
        }
    }
    fake__unlock();
}

const fake_kernel_sig *fake__kernel_sig(const char *kernel)
{
    for (int i = 0; kernel != NULL && i < fake__s.nsigs; i++)
        if (!strcmp(fake__s.sigs[i].kernel, kernel))
            return &fake__s.sigs[i];
    return NULL;
}

void fake_set_max_active_clusters(int n)
{
    fake__lock();
    fake__s.max_active_clusters = n;
    fake__unlock();
}

static CUresult fake_cuFuncGetParamInfo(CUfunction h, size_t index, size_t *offset, size_t *size)
{
    FAKE_ENTER(cuFuncGetParamInfo);
    struct CUfunc_st *f = fake__find_func(h);
    if (f == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    if (offset == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    const fake_kernel_sig *s = fake__kernel_sig(f->name);
    if (s == NULL || index >= (size_t)s->count)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE); /* the documented answer past the last parameter */
    *offset = s->offset[index];
    if (size)
        *size = s->size[index];
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuOccupancyMaxActiveClusters(int *n, CUfunction h, const CUlaunchConfig *cfg)
{
    FAKE_ENTER(cuOccupancyMaxActiveClusters);
    struct CUfunc_st *f = fake__find_func(h);
    if (f == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    if (n == NULL || cfg == NULL || (cfg->numAttrs && cfg->attrs == NULL))
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    unsigned size = 0;
    for (unsigned i = 0; i < cfg->numAttrs; i++)
        if (cfg->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            size = cfg->attrs[i].value.clusterDim.x * cfg->attrs[i].value.clusterDim.y *
                   cfg->attrs[i].value.clusterDim.z;
    if (size == 0) /* no cluster given and none required by the kernel */
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (size > 16 || (size > 8 && !f->attr[CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED]))
        FAKE_RETURN(CUDA_ERROR_INVALID_CLUSTER_SIZE);
    if (fake__s.max_active_clusters >= 0) {
        *n = fake__s.max_active_clusters;
        FAKE_RETURN(CUDA_SUCCESS);
    }
    const fake_device *d = &fake__s.dev[f->mod->ctx->device].cfg;
    unsigned threads = cfg->blockDimX * cfg->blockDimY * cfg->blockDimZ;
    unsigned smem = cfg->sharedMemBytes + (unsigned)f->attr[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES];
    unsigned per_sm = threads ? 2048u / threads : 0;
    if (smem > 0 && (unsigned)d->smem_optin / smem < per_sm)
        per_sm = (unsigned)d->smem_optin / smem;
    *n = (int)((unsigned)d->sm_count * per_sm / size);
    FAKE_RETURN(CUDA_SUCCESS);
}

void fake__fill_kernel(bc__driver *t)
{
    t->cuFuncGetParamInfo = fake_cuFuncGetParamInfo;
    t->cuOccupancyMaxActiveClusters = fake_cuOccupancyMaxActiveClusters;
}
