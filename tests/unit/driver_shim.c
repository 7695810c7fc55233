/* A stand-in libcuda for the driver loader's real dlopen path: it exports
 * cuGetProcAddress_v2 and hands out a few working entries (version, init, a
 * device count of 0, error names) and a refusing stub for every other one.
 * BC_SHIM_VERSION sets the CUDA version it claims (default 12030);
 * cuFuncGetParamInfo exists only from 12040, as in real drivers;
 * BC_SHIM_MISSING names one more entry it lacks. Test-only. */
#include <cuda.h>
#include <stdlib.h>
#include <string.h>

static int claimed(void)
{
    const char *v = getenv("BC_SHIM_VERSION");
    return v ? atoi(v) : 12030;
}

static CUresult shim_version(int *v)
{
    *v = claimed();
    return CUDA_SUCCESS;
}

static CUresult shim_init(unsigned flags)
{
    (void)flags;
    return CUDA_SUCCESS;
}

static CUresult shim_count(int *n)
{
    *n = 0;
    return CUDA_SUCCESS;
}

static CUresult shim_error_name(CUresult r, const char **s)
{
    (void)r;
    *s = "CUDA_ERROR_FROM_SHIM";
    return CUDA_SUCCESS;
}

static CUresult shim_no_context(CUcontext *c)
{
    *c = NULL;
    return CUDA_SUCCESS;
}

static CUresult shim_refuse(void) { return CUDA_ERROR_NOT_SUPPORTED; }

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status);

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    (void)flags;
    const char *missing = getenv("BC_SHIM_MISSING");
    if ((missing && !strcmp(symbol, missing)) || (!strcmp(symbol, "cuFuncGetParamInfo") && claimed() < 12040)) {
        *pfn = NULL;
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    if (version > claimed()) {
        *pfn = NULL;
        *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        return CUDA_ERROR_NOT_FOUND;
    }
    void *fn = (void *)shim_refuse;
    if (!strcmp(symbol, "cuDriverGetVersion"))
        fn = (void *)shim_version;
    else if (!strcmp(symbol, "cuInit"))
        fn = (void *)shim_init;
    else if (!strcmp(symbol, "cuDeviceGetCount"))
        fn = (void *)shim_count;
    else if (!strcmp(symbol, "cuGetErrorName"))
        fn = (void *)shim_error_name;
    else if (!strcmp(symbol, "cuCtxGetCurrent"))
        fn = (void *)shim_no_context;
    *pfn = fn;
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}
