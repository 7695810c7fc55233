/* Internal: modules, kernels and kernel plans (module.h), shared by the
 * module loader, the kernel plans, the embedded image and graphs. */
#ifndef BC_RUNTIME_MODULE_INTERNAL_H
#define BC_RUNTIME_MODULE_INTERNAL_H

#include <time.h>

#include "barecuda/module.h"
#include "check.h"
#include "internal.h"

struct bc_kernel {
    struct bc_kernel *next; /* the module's resolved kernels, newest first */
    bc_module *mod;
    CUfunction fn;
    int described;          /* info filled from the driver */
    int smem_attr;          /* the kernel's MAX_DYNAMIC_SHARED_SIZE_BYTES as last read or set */
    int nonportable;        /* NON_PORTABLE_CLUSTER_SIZE_ALLOWED set by a plan */
    bc_kernel_info info;    /* info.name points at name[] */
    char name[];
};

struct bc_module {
    bc__link link;          /* first: dev->modules (user modules only) */
    bc_device *dev;
    CUmodule handle;
    void *copy;             /* our copy of the selected image; NULL when borrowed */
    bc__fatbin_entry entry; /* the selected entry */
    bc_module_info info;    /* info.arch points at arch[] */
    char arch[24];
    bc_kernel *kernels;
    int uses;               /* live kernel plans and graph nodes made from its kernels */
};

struct bc_kernel_plan {
    bc__link link;          /* first: dev->kernel_plans */
    bc_device *dev;
    bc_kernel *kernel;
    CUlaunchConfig launch;  /* hStream filled per launch */
    CUlaunchAttribute attrs[2]; /* programmatic serialization; cluster dimension */
    int param_count;
    uint32_t size[BC_KERNEL_MAX_PARAMS];
    uint32_t offset[BC_KERNEL_MAX_PARAMS];
    uint64_t extent[BC_KERNEL_MAX_PARAMS];
    void *args[BC_KERNEL_MAX_PARAMS]; /* args[i] = params + offset[i] */
    size_t param_bytes;
    unsigned char *params;  /* inside this allocation, 64-byte aligned */
};

static inline double bc__now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* What bc__module_load needs beyond the public options. */
typedef struct bc__module_args {
    const uint8_t *bytes;
    size_t len;
    const uint64_t *digest;     /* NULL: no digest check */
    const uint64_t *entry_digests; /* non-NULL (digest NULL, no JIT): the build's digest of each entry, */
    size_t entry_count;            /* and of the entry headers; only the headers and the selected */
    uint64_t headers_digest;       /* entry are hashed (bc__loader_check_entry) */
    const char *const *kernels; /* resolved eagerly, each described */
    int kernel_count;
    int allow_ptx_jit;
    int borrow;                 /* 1: the bytes outlive the module: the driver reads them in place */
} bc__module_args;

/* The loader behind bc_module_load and the embedded image: the pure check
 * (check.h), a copy of the selected entry (unless borrowed; PTX gets a NUL
 * terminator), cuModuleLoadDataEx with the driver's error log, the eager
 * kernels. The module is not linked into the device's list. check_us and
 * load_us may be NULL. On failure nothing is loaded or allocated. */
bc_status bc__module_load(bc_device *dev, const bc__module_args *a, bc_module **out_mod, double *check_us,
                          double *load_us);

/* Unloads and frees the module and its kernels, whatever its use count;
 * driver failures are only logged (bc_last_error() unchanged). */
void bc__module_free(bc_module *mod);

/* The kernel `name` of the module: cuModuleGetFunction the first time
 * (BC_ERR_MISSING_KERNEL when absent), and with describe = 1 its attributes
 * and parameter signature read once (kernel.c). */
bc_status bc__kernel_resolve(bc_module *mod, const char *name, int describe, bc_kernel **out_kernel);

/* Re-records the driver failure `got` that BC_CU just returned as `st`
 * (keeping its CUresult, with `what` as the message), unless it is a sticky
 * device fault, which stays BC_ERR_DEVICE_LOST. A BC_ERR_NOT_READY, which
 * BC_CU does not record, is recorded here as `st` with its CUresult. */
bc_status bc__refail(bc_status got, bc_status st, const char *call, const char *what);

/* Used by bc_device_close: each frees the object and unlinks it. */
void bc__module_release(bc__link *node);

/* Frees the module's host memory and leaves it loaded (a device abandoned
 * with its context, bc_device_close_timeout). NULL is a no-op. */
void bc__module_forget(bc_module *mod);
void bc__kernel_plan_release(bc__link *node);

#endif
