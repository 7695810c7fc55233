/* barecuda — user modules, kernels and kernel launch plans.
 *
 * A module is a fatbin (or a plain cubin) loaded into a device's context:
 * the same bounds-checked parser, digest check and image-selection rule that
 * barecuda applies to its own embedded image (which is itself loaded through
 * this path), then one cuModuleLoadDataEx and the eager resolution of every
 * kernel the caller names. Nothing is compiled at run time unless the caller
 * opts in to PTX JIT explicitly.
 *
 * A kernel plan fixes everything about one launch of a kernel (grid, block,
 * dynamic shared memory, cluster, programmatic serialization, the parameter
 * block) and checks it once, against the device, the kernel's attributes
 * and the kernel's own parameter signature. Its launch is one
 * cuLaunchKernelEx, with no allocation and no lock, like a GEMM plan's.
 *
 * Ownership: modules and kernel plans belong to their device and are
 * released by bc_device_close if the caller forgot. A bc_kernel is a borrowed
 * view into its module: valid until the module is unloaded.
 */
#ifndef BARECUDA_MODULE_H
#define BARECUDA_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bc_module bc_module;
typedef struct bc_kernel bc_kernel;
typedef struct bc_kernel_plan bc_kernel_plan;

/* The file loader's default size limit. */
#define BC_MODULE_DEFAULT_MAX_FILE_BYTES (256u << 20)

typedef struct bc_module_options {
    int check_digest;          /* 1: the bytes must hash (XXH64, seed 0) to expected_digest */
    uint64_t expected_digest;
    const char *const *kernels; /* names resolved at load (NULL: none); BC_ERR_MISSING_KERNEL names the first absent one */
    int kernel_count;
    int allow_ptx_jit;         /* 1: when no cubin runs on the device, JIT-compile the best PTX entry */
    size_t max_file_bytes;     /* bc_module_load_file only; 0 = BC_MODULE_DEFAULT_MAX_FILE_BYTES */
} bc_module_options;

/* Contract: fills *out_opts with: no digest check, no kernels resolved
 * eagerly, cubins only (no JIT), the default file-size limit. */
bc_status bc_module_options_default(bc_module_options *out_opts);

/* Contract: checks bytes[0, len) (a fatbin container, or a plain cubin ELF)
 * with the loader's bounds-checked parser, verifies the digest when asked,
 * selects the image for dev's compute capability by the documented rule
 * (a cubin; PTX only with allow_ptx_jit and only when no cubin runs; a
 * plain cubin's SM number comes from its ELF header, which CUDA 13 writes
 * without the a/f suffix, so the driver has the last word on those),
 * loads it with cuModuleLoadDataEx (the driver's error log goes into
 * bc_last_error()) and resolves every kernel in opts->kernels. barecuda keeps
 * its own copy of the selected image; `bytes` may be freed on return.
 * opts == NULL means the defaults. On failure *out_mod is untouched, nothing
 * is loaded and bc_last_error() says what was wrong: BC_ERR_FATBIN_CORRUPT,
 * BC_ERR_DIGEST_MISMATCH, BC_ERR_UNSUPPORTED_ARCH (naming the images
 * present), BC_ERR_FATBIN_COMPRESSED, BC_ERR_DRIVER_TOO_OLD (a cubin this
 * driver cannot load), BC_ERR_MODULE_LOAD, BC_ERR_MISSING_KERNEL,
 * BC_ERR_INVALID_ARGUMENT. */
bc_status bc_module_load(bc_device *dev, const void *bytes, size_t len, const bc_module_options *opts,
                         bc_module **out_mod);

/* Contract: bc_module_load over the contents of the file at `path`, which
 * must be a regular file (BC_ERR_NOT_REGULAR_FILE otherwise: directories,
 * devices, FIFOs, sockets) no larger than opts->max_file_bytes
 * (BC_ERR_FILE_TOO_LARGE); BC_ERR_FILE_IO when it cannot be opened or read
 * completely. Symbolic links are followed. */
bc_status bc_module_load_file(bc_device *dev, const char *path, const bc_module_options *opts,
                              bc_module **out_mod);

/* Contract: unloads the module. BC_ERR_IN_USE (and nothing changes) while a
 * kernel plan or a graph made from one of its kernels is alive: destroy
 * those first. NULL is a no-op returning BC_OK. A failure of the driver's
 * unload is logged, not returned: the module is gone either way, and
 * bc_last_error() is left as it was. */
bc_status bc_module_unload(bc_module *mod);

typedef struct bc_module_info {
    const char *arch;          /* image selected, e.g. "sm_90a", or "compute_90a" when JIT-compiled */
    int jit;                   /* 1 if the selected entry was PTX compiled by the driver at load */
    uint64_t digest;           /* XXH64 of the bytes given to the loader */
    size_t image_bytes;        /* bytes of the selected entry */
    int entries;               /* entries in the container (1 for a plain cubin) */
    int kernels_resolved;      /* kernels resolved so far (eagerly and by bc_kernel_get) */
} bc_module_info;

/* Contract: describes the loaded module; no driver call. */
bc_status bc_module_query(const bc_module *mod, bc_module_info *out_info);

/* Contract: resolves the kernel `name` (cuModuleGetFunction once; later
 * calls return the same handle without a driver call). BC_ERR_MISSING_KERNEL
 * naming it when the module has no such kernel; BC_ERR_NOT_SUPPORTED for a
 * kernel of more than BC_KERNEL_MAX_PARAMS parameters (the signature
 * barecuda keeps has room for that many); BC_ERR_DEVICE_LOST at once after
 * the process lost its GPU. */
bc_status bc_kernel_get(bc_module *mod, const char *name, bc_kernel **out_kernel);

#define BC_KERNEL_MAX_PARAMS 64

typedef struct bc_kernel_info {
    const char *name;
    int registers;             /* per thread */
    int static_smem_bytes;
    int max_dynamic_smem_bytes; /* the most a launch may ask for (device opt-in minus static) */
    int max_threads_per_block;
    int local_bytes;           /* per-thread local memory (spills, stack) */
    int param_count;           /* -1 when the driver cannot say (before CUDA 12.4) */
    uint32_t param_offset[BC_KERNEL_MAX_PARAMS];
    uint32_t param_size[BC_KERNEL_MAX_PARAMS];
} bc_kernel_info;

/* Contract: the kernel's attributes and parameter signature, read from the
 * driver once at bc_kernel_get (cuFuncGetAttribute, cuFuncGetParamInfo).
 * Without cuFuncGetParamInfo (drivers before CUDA 12.4) param_count is -1
 * and the offsets and sizes are not filled. */
bc_status bc_kernel_query(const bc_kernel *kernel, bc_kernel_info *out_info);

/* One kernel parameter, by value: `size` bytes at `value`. A parameter that
 * is a device pointer may declare the bytes the kernel reaches through it
 * (extent_bytes > 0); such a pointer is checked at plan time and on every
 * bc_kernel_plan_set_param like a GEMM operand. */
typedef struct bc_kernel_param {
    const void *value;
    uint32_t size;
    uint64_t extent_bytes;     /* 0: not a checked buffer */
} bc_kernel_param;

typedef struct bc_kernel_plan_desc {
    uint32_t grid[3];          /* blocks; 0 counts as 1 */
    uint32_t block[3];         /* threads; 0 counts as 1 */
    uint32_t dynamic_smem_bytes;
    uint32_t cluster[3];       /* {0,0,0} or {1,1,1}: no cluster */
    int programmatic;          /* 1: the kernel calls griddepcontrol.wait before reading what the
                                  previous kernel wrote, so it may start during that kernel's tail */
    const bc_kernel_param *params;
    int param_count;
    int unchecked_params;      /* 1: accept params without a signature check on drivers that
                                  cannot report one (before CUDA 12.4); ignored when they can */
} bc_kernel_plan_desc;

/* Contract: validates desc against the device and the kernel (grid x below
 * 2^31, y and z at most 65535; block x and y at most 1024, z at most 64,
 * their product within the kernel's maximum threads per block; static plus
 * dynamic shared memory within the device's opt-in limit; a cluster, on
 * compute capability 9.0 or newer only, of at most 16 CTAs that divides the
 * grid and of which cuOccupancyMaxActiveClusters says at least one fits)
 * and the parameters against the kernel's signature (count, then each size:
 * BC_ERR_PARAM_MISMATCH naming the parameter and both sizes; at most 32764
 * bytes in all), then sets what the launch needs on the kernel (its
 * dynamic-shared-memory limit, raised only; the non-portable cluster size
 * for clusters of more than 8) and copies the parameter values into the
 * plan, each at the kernel's own offset. Errors: BC_ERR_LAUNCH_CONFIG,
 * BC_ERR_CLUSTER, BC_ERR_PARAM_MISMATCH, BC_ERR_INVALID_ARGUMENT,
 * BC_ERR_NULL_POINTER (a checked buffer that is 0), BC_ERR_OUT_OF_BOUNDS
 * and BC_ERR_WRONG_DEVICE (a checked buffer's extent past its allocation,
 * or memory this device cannot address), BC_ERR_OUT_OF_HOST_MEMORY,
 * BC_ERR_DRIVER, BC_ERR_DEVICE_LOST (at once, after the process lost its
 * GPU), BC_ERR_NOT_SUPPORTED:
 * the driver predates CUDA 12.4 (no cuFuncGetParamInfo) and
 * unchecked_params == 0; with unchecked_params = 1 the values are packed at
 * 8-byte boundaries and their sizes are the caller's responsibility. On
 * failure *out_plan is untouched. */
bc_status bc_kernel_plan_create(bc_kernel *kernel, const bc_kernel_plan_desc *desc, bc_kernel_plan **out_plan);

/* Contract: replaces parameter `index` with `size` bytes at `value` (size
 * must equal the parameter's; a checked buffer is checked again). No
 * allocation; no driver call, except one cuPointerGetAttributes for a
 * checked buffer outside barecuda's pools and registered ranges;
 * BC_ERR_DEVICE_LOST at once after the process lost its GPU. On
 * failure the plan is unchanged. A graph
 * that captured the plan sees the change after bc_graph_update_node. */
bc_status bc_kernel_plan_set_param(bc_kernel_plan *plan, int index, const void *value, uint32_t size);

/* Contract: one cuLaunchKernelEx on `stream`; no allocation, no lock, no
 * validation beyond NULL handles and a stream of another device handle than the
 * plan's (BC_ERR_INVALID_ARGUMENT, no driver call): the rest was done at
 * plan time. */
bc_status bc_kernel_launch(const bc_kernel_plan *plan, bc_stream *stream);

/* Contract: frees the plan. NULL is a no-op. A graph that captured the
 * plan keeps running what it captured (the driver holds its own copy); only
 * bc_graph_update_node needs a live plan. */
void bc_kernel_plan_destroy(bc_kernel_plan *plan);

#ifdef __cplusplus
}
#endif
#endif
