/* Loading libcuda.so.1 and resolving the function table. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "driver.h"
#include "error.h"

const bc__driver *bc__drv;

static pthread_mutex_t drv_lock = PTHREAD_MUTEX_INITIALIZER;
static bc__driver table;
static void *lib_handle;
static unsigned refs;
static const bc__driver *override;
static const char *library_path = "libcuda.so.1";
static int driver_version;

static const char *const entry_names[] = {
#define X(name, ver) #name,
#include "driver_list.h"
#undef X
};

static const size_t entry_offsets[] = {
#define X(name, ver) offsetof(bc__driver, name),
#include "driver_list.h"
#undef X
};

/* The ABI version each entry is asked for; 0 marks a required entry (asked
 * at BC_CUDA_ABI_VERSION), anything else an optional one (driver_list.h). */
static const int entry_optional_abi[] = {
#define X(name, ver) 0,
#define XO(name, ver) ver,
#include "driver_list.h"
#undef XO
#undef X
};

#define ENTRY_COUNT (sizeof entry_names / sizeof entry_names[0])

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

void bc__driver_set_override(const bc__driver *fake)
{
    pthread_mutex_lock(&drv_lock);
    override = fake;
    pthread_mutex_unlock(&drv_lock);
    bc__lost_reset();
}

void bc__driver_set_library(const char *path)
{
    pthread_mutex_lock(&drv_lock);
    library_path = path ? path : "libcuda.so.1";
    pthread_mutex_unlock(&drv_lock);
}

/* Resolves every entry of driver_list.h into `t` through cuGetProcAddress_v2. */
static bc_status resolve_all(void *h, bc__driver *t)
{
    PFN_cuGetProcAddress_v12000 gpa = (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2");
    if (gpa == NULL)
        return BC_FAIL(BC_ERR_DRIVER_TOO_OLD, "cuGetProcAddress_v2",
                       "%s has no cuGetProcAddress_v2: the driver predates CUDA 12.0", library_path);
    for (size_t i = 0; i < ENTRY_COUNT; i++) {
        void *fn = NULL;
        CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SUCCESS;
        const int opt_abi = entry_optional_abi[i];
        CUresult r = gpa(entry_names[i], &fn, opt_abi ? opt_abi : BC_CUDA_ABI_VERSION,
                         CU_GET_PROC_ADDRESS_DEFAULT, &q);
        if (r == CUDA_ERROR_STUB_LIBRARY)
            return bc__fail(BC_ERR_DRIVER_STUB, r, "CUDA_ERROR_STUB_LIBRARY", "cuGetProcAddress",
                            __FILE__, __LINE__, "%s is the CUDA toolkit's stub library", library_path);
        if (opt_abi && (r != CUDA_SUCCESS || q != CU_GET_PROC_ADDRESS_SUCCESS))
            fn = NULL; /* optional and older than this driver: the entry stays NULL */
        else if (q == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
            return BC_FAIL(BC_ERR_DRIVER_TOO_OLD, entry_names[i],
                           "driver too old for %s at CUDA ABI %d", entry_names[i], BC_CUDA_ABI_VERSION);
        else if (r != CUDA_SUCCESS || fn == NULL)
            return bc__fail(BC_ERR_MISSING_ENTRY_POINT, (int)r, "", entry_names[i], __FILE__, __LINE__,
                            "driver does not provide %s (CUresult %d)", entry_names[i], (int)r);
        memcpy((char *)t + entry_offsets[i], &fn, sizeof fn);
    }
    return BC_OK;
}

/* Version check and cuInit through the installed table. */
static bc_status check_and_init(bc__driver_timing *tm)
{
    int version = 0;
    CUresult r = table.cuDriverGetVersion(&version);
    if (r == CUDA_ERROR_STUB_LIBRARY)
        return bc__fail(BC_ERR_DRIVER_STUB, r, "CUDA_ERROR_STUB_LIBRARY", "cuDriverGetVersion",
                        __FILE__, __LINE__, "%s is the CUDA toolkit's stub library", library_path);
    if (r != CUDA_SUCCESS || version < BC_CUDA_ABI_VERSION)
        return bc__fail(BC_ERR_DRIVER_TOO_OLD, (int)r, "", "cuDriverGetVersion", __FILE__, __LINE__,
                        "driver reports CUDA %d.%d; barecuda needs 12.0 or newer", version / 1000,
                        (version % 1000) / 10);
    driver_version = version;
    double t0 = now_us();
    r = table.cuInit(0);
    tm->cuinit_us = now_us() - t0;
    if (r == CUDA_ERROR_STUB_LIBRARY)
        return bc__fail(BC_ERR_DRIVER_STUB, r, "CUDA_ERROR_STUB_LIBRARY", "cuInit", __FILE__, __LINE__,
                        "%s is the CUDA toolkit's stub library", library_path);
    if (r == CUDA_ERROR_NO_DEVICE)
        return bc__fail(BC_ERR_NO_DEVICE, r, "CUDA_ERROR_NO_DEVICE", "cuInit", __FILE__, __LINE__,
                        "the driver found no CUDA device");
    if (r != CUDA_SUCCESS)
        return bc__fail(BC_ERR_DRIVER, r, "", "cuInit", __FILE__, __LINE__, "cuInit failed (CUresult %d)",
                        (int)r);
    return BC_OK;
}

int bc__driver_version(void)
{
    pthread_mutex_lock(&drv_lock);
    const int v = driver_version;
    pthread_mutex_unlock(&drv_lock);
    return v;
}

bc_status bc__driver_acquire(bc__driver_timing *out_timing)
{
    bc__driver_timing tm = {0, 0};
    bc_status st = BC_OK;
    pthread_mutex_lock(&drv_lock);
    if (refs > 0)
        goto done_ref;
    double t0 = now_us();
    if (override != NULL) {
        table = *override;
    } else {
        lib_handle = dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
        if (lib_handle == NULL) {
            const char *why = dlerror();
            st = BC_FAIL(BC_ERR_NO_DRIVER, "dlopen", "cannot load %s: %s", library_path,
                         why ? why : "unknown reason");
            goto fail;
        }
        st = resolve_all(lib_handle, &table);
        if (st != BC_OK)
            goto fail_close;
    }
    tm.dlopen_us = now_us() - t0;
    st = check_and_init(&tm);
    if (st != BC_OK)
        goto fail_close;
    bc__drv = &table;
done_ref:
    refs++;
    pthread_mutex_unlock(&drv_lock);
    if (out_timing)
        *out_timing = tm;
    return BC_OK;

fail_close:
    if (lib_handle != NULL)
        dlclose(lib_handle);
    lib_handle = NULL;
fail:
    pthread_mutex_unlock(&drv_lock);
    return st;
}

void bc__driver_release(void)
{
    pthread_mutex_lock(&drv_lock);
    if (refs > 0 && --refs == 0) {
        bc__drv = NULL;
        if (lib_handle != NULL)
            dlclose(lib_handle);
        lib_handle = NULL;
    }
    pthread_mutex_unlock(&drv_lock);
}

/* The results after which cuda.h says the process must be terminated and
 * relaunched ("any further CUDA work will return the same error"), plus an
 * uncorrectable ECC error and a device-side assert, which leave the context
 * unusable. CUDA_ERROR_CONTEXT_IS_DESTROYED (709) is not among them: it
 * reports a call on a context that was destroyed, a usage error. */
int bc__cu_is_sticky(int r)
{
    switch ((CUresult)r) {
    case CUDA_ERROR_ECC_UNCORRECTABLE:      /* 214 */
    case CUDA_ERROR_CONTAINED:              /* 226 */
    case CUDA_ERROR_ILLEGAL_ADDRESS:        /* 700 */
    case CUDA_ERROR_LAUNCH_TIMEOUT:         /* 702 */
    case CUDA_ERROR_ASSERT:                 /* 710 */
    case CUDA_ERROR_HARDWARE_STACK_ERROR:   /* 714 */
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:    /* 715 */
    case CUDA_ERROR_MISALIGNED_ADDRESS:     /* 716 */
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:  /* 717 */
    case CUDA_ERROR_INVALID_PC:             /* 718 */
    case CUDA_ERROR_LAUNCH_FAILED:          /* 719 */
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:     /* 721 */
    case CUDA_ERROR_MPS_CLIENT_TERMINATED:  /* 810 */
    case CUDA_ERROR_EXTERNAL_DEVICE:        /* 911 */
        return 1;
    default:
        return 0;
    }
}

/* ---------------------------------------------------------------- loss */

/* The first sticky result this process saw, the call that returned it and
 * its name (copied: libcuda may be unloaded when the message is written).
 * The compare-and-swap winner writes call and name, then publishes them. */
static int lost_result;
static const char *lost_call;
static char lost_name[64];
static int lost_published;

static void note_sticky(CUresult r, const char *call, const char *name)
{
    int expected = 0;
    if (!__atomic_compare_exchange_n(&lost_result, &expected, (int)r, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    lost_call = call;
    snprintf(lost_name, sizeof lost_name, "%s", name && *name ? name : "a sticky error");
    __atomic_store_n(&lost_published, 1, __ATOMIC_RELEASE);
}

int bc__lost_result(void) { return __atomic_load_n(&lost_result, __ATOMIC_ACQUIRE); }

bc_status bc__lost_fail(const char *what, const char *file, int line)
{
    const int r = bc__lost_result();
    const int known = __atomic_load_n(&lost_published, __ATOMIC_ACQUIRE);
    const char *call = known ? lost_call : "a driver call", *name = known ? lost_name : "a sticky error";
    return bc__fail(BC_ERR_DEVICE_LOST, r, known ? lost_name : "", known ? lost_call : "", file, line,
                    "%s refused: the GPU was lost to this process earlier (%s returned %s (%d)); CUDA cannot "
                    "recover from this in the same process: restart the process",
                    what, call, name, r);
}

void bc__lost_reset(void)
{
    __atomic_store_n(&lost_published, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&lost_result, 0, __ATOMIC_RELEASE);
}

bc_status bc__cu_result(CUresult r, const char *call, const char *file, int line)
{
    if (r == CUDA_SUCCESS)
        return BC_OK;
    if (r == CUDA_ERROR_NOT_READY)
        return BC_ERR_NOT_READY;
    const char *name = "";
    if (bc__drv != NULL && bc__drv->cuGetErrorName != NULL &&
        bc__drv->cuGetErrorName(r, &name) != CUDA_SUCCESS)
        name = "";
    bc_status st = BC_ERR_DRIVER;
    if (bc__cu_is_sticky(r)) {
        st = BC_ERR_DEVICE_LOST;
        note_sticky(r, call, name);
    }
    else if (r == CUDA_ERROR_STUB_LIBRARY)
        st = BC_ERR_DRIVER_STUB;
    return bc__fail(st, (int)r, name ? name : "", call, file, line, "%s returned %s (%d)", call,
                    (name && *name) ? name : "CUresult", (int)r);
}

bc_status bc__cu_cleanup_result(CUresult r, const char *call, const char *file, int line)
{
    if (r == CUDA_SUCCESS)
        return BC_OK;
    if (r == CUDA_ERROR_NOT_READY) /* a poll's answer, not a failure */
        return BC_ERR_NOT_READY;
    if (bc__log_enabled(BC_LOG_WARN)) {
        const char *name = NULL;
        if (bc__drv == NULL || bc__drv->cuGetErrorName == NULL ||
            bc__drv->cuGetErrorName(r, &name) != CUDA_SUCCESS)
            name = NULL;
        bc__log(BC_LOG_WARN, "%s returned %s (%d) at %s:%d while releasing; ignored", call,
                name ? name : "CUresult", (int)r, file, line);
    }
    if (r == CUDA_ERROR_NOT_READY)
        return BC_ERR_NOT_READY;
    if (!bc__cu_is_sticky(r))
        return BC_ERR_DRIVER;
    const char *name = NULL;
    if (bc__drv == NULL || bc__drv->cuGetErrorName == NULL || bc__drv->cuGetErrorName(r, &name) != CUDA_SUCCESS)
        name = NULL;
    note_sticky(r, call, name);
    return BC_ERR_DEVICE_LOST;
}
