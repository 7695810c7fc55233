/* A fake CUDA driver for unit tests: it fills the runtime's bc__driver table
 * (every entry of runtime/driver_list.h) with functions that model devices,
 * contexts, memory, streams, events, modules, launches, tensor maps and
 * graphs in host memory, count every call, and can fail the n-th call with a
 * chosen CUresult.
 *
 *   fake_install();                 // clean state + bc__driver_set_override
 *   bc_device_open(&cfg, &dev);     // runs against the fake
 *   ...
 *   bc_device_close(dev);
 *   assert_int_equal(fake_live_objects(), 0);   // every create had its destroy
 *
 * Model, briefly (each section of fake_*.c says more):
 * - cuInit must succeed before anything but cuDriverGetVersion/cuInit/
 *   cuGetError*; it fails with the result set by fake_set_init_result, or
 *   CUDA_ERROR_NO_DEVICE when no device is configured.
 * - Each thread has a context stack, as in the real driver: cuCtxCreate
 *   pushes, cuCtxSetCurrent replaces the top (NULL pops), destroying the
 *   context on top pops it and the one below is current again.
 *   Creating objects (memory, streams, events, modules) and launching need a
 *   current context (CUDA_ERROR_INVALID_CONTEXT otherwise); operations on a
 *   stream/function of another context fail with CUDA_ERROR_INVALID_HANDLE.
 * - Destroying a context does NOT free what was made in it, so a leak shows
 *   up in fake_live_objects() instead of being swept away.
 * - Device memory is real host memory (posix_memalign, 512-byte aligned):
 *   copies really copy. Copies and memsets must lie inside one live
 *   allocation (CUDA_ERROR_INVALID_VALUE otherwise).
 * - Fault injection: an injected failure on a destroy/release entry
 *   (cuCtxDestroy, cuDevicePrimaryCtxRelease, cuMemFree, cuMemFreeHost,
 *   cuStreamDestroy, cuEventDestroy, cuModuleUnload, cuGraphDestroy,
 *   cuGraphExecDestroy) still releases the object, as the real driver does
 *   when a destroy reports a deferred error; every other entry returns the
 *   injected result without doing anything. So after an injected failure,
 *   fake_live_objects() == 0 means every create was matched by a destroy call.
 *
 * Thread safety: every entry point takes one global lock; the fake_* control
 * functions too. fake_reset/fake_install must not race with driver calls.
 */
#ifndef BC_TESTS_FAKE_DRIVER_H
#define BC_TESTS_FAKE_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "driver.h"

/* One id per entry of driver_list.h, in its order: FAKE_E_cuMemAlloc, ... */
typedef enum fake_entry {
#define X(name, ver) FAKE_E_##name,
#include "driver_list.h"
#undef X
    FAKE_ENTRY_COUNT
} fake_entry;

/* ------------------------------------------------------------------ setup */

/* fake_reset() + bc__driver_set_override(fake_table()). Call with no
 * bc_device open (the runtime holds no driver reference). */
void fake_install(void);

/* Frees every object still alive, forgets all counters, faults and records,
 * and restores the defaults below. The calling thread's current context is
 * cleared (other threads keep a stale one: reset between tests only). */
void fake_reset(void);

/* The table the fake fills (calls through it are counted like any other). */
const bc__driver *fake_table(void);

#define FAKE_MAX_DEVICES 8

typedef struct fake_device {
    char name[64];
    int cc_major, cc_minor;
    int sm_count;
    size_t total_mem;
    int smem_optin;      /* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    int l2_bytes;
    int prio_least;      /* cuCtxGetStreamPriorityRange: numerically largest */
    int prio_greatest;   /* numerically smallest */
} fake_device;

/* The default device: "Fake H100", cc 9.0, 132 SMs, 80 GB, 232448 B smem
 * opt-in, 50 MB L2, priorities [-5, 0]. */
void fake_device_defaults(fake_device *out);

/* Replaces the device list (0..FAKE_MAX_DEVICES; default: one default
 * device). Zero devices makes cuInit fail with CUDA_ERROR_NO_DEVICE. */
void fake_set_devices(const fake_device *devs, int count);

/* Overrides one cuDeviceGetAttribute value of one device. */
void fake_set_device_attr(int ordinal, CUdevice_attribute attr, int value);

void fake_set_driver_version(int version);   /* default 13000 */
void fake_set_init_result(CUresult r);       /* what cuInit returns; default CUDA_SUCCESS */

/* Byte limits on live device / pinned host memory, across devices (0 = no
 * limit beyond each device's total_mem). Past it: CUDA_ERROR_OUT_OF_MEMORY. */
void fake_set_mem_limit(size_t device_bytes, size_t host_bytes);

/* cuStreamQuery (and cuEventQuery / cuEventElapsedTime) report
 * CUDA_ERROR_NOT_READY: for the next `polls` cuStreamQuery calls, or forever
 * with FAKE_BUSY_FOREVER; 0 (default) = all work is always complete. */
#define FAKE_BUSY_FOREVER (-1)
void fake_set_busy(int polls);

/* Each cuEventRecord advances the fake clock by this many ms (default 1.5),
 * so the elapsed time between consecutive records is exactly this. */
void fake_set_event_tick_ms(float ms);

/* Bytes of *kernelParams[0] copied into each launch record and captured
 * kernel node (default 0: none; at most FAKE_MAX_PARAM_BYTES). */
#define FAKE_MAX_PARAM_BYTES 4096
void fake_set_param_size(size_t bytes);

/* The next cuModuleLoadDataEx fails with `r`, writing `log` (may be NULL)
 * into its CU_JIT_ERROR_LOG_BUFFER option if one was given. */
void fake_module_fail_next(CUresult r, const char *log);

/* Size of the next image given to cuModuleLoadDataEx, for bytes that are
 * neither an ELF, a fatbin, nor NUL-terminated text (whose sizes the fake
 * works out itself). */
void fake_set_next_image_size(size_t bytes);

/* Function attribute `attr` of every kernel named `kernel` starts at `value`
 * when resolved (e.g. CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES to fake a spill). */
void fake_set_kernel_attr(const char *kernel, CUfunction_attribute attr, int value);

/* The parameter signature cuFuncGetParamInfo reports for every kernel named
 * `kernel` (count <= FAKE_MAX_PARAMS; offsets and sizes in the device-side
 * layout). A kernel without one reports no parameters. Launches and graph
 * updates of such a kernel copy every parameter to its offset in the
 * recorded parameter bytes (instead of fake_set_param_size bytes of the
 * first). */
#define FAKE_MAX_PARAMS 64
void fake_set_kernel_params(const char *kernel, int count, const size_t *offsets, const size_t *sizes);

/* What cuOccupancyMaxActiveClusters answers (-1, the default: the SM count
 * times the blocks that fit an SM by threads and shared memory, divided by
 * the cluster size). */
void fake_set_max_active_clusters(int n);

/* The table entry of `e` becomes NULL until the next fake_reset/install, as
 * an optional entry (driver_list.h XO) is on a driver that lacks it. Call
 * after fake_install and before bc_device_open. */
void fake_drop_entry(fake_entry e);
/* ------------------------------------------------------------------ faults */

/* A poisoned process, as a sticky error leaves a real one: from now on every
 * call that needs a context (creating one, retaining the primary one,
 * allocating, copying, launching, querying or synchronising a stream)
 * returns `r`; cuInit, cuDriverGetVersion, device queries, error names,
 * cuCtxGet/SetCurrent, cuCtxDestroy, primary release/state and tensor-map
 * encoding still work; the other release entries release and return `r`.
 * Only fake_reset ends it. fake_poisoned(): the result, 0 when healthy. */
void fake_poison(CUresult r);
CUresult fake_poisoned(void);

/* 1: an injected sticky result (bc__cu_is_sticky) also poisons the process,
 * as the real driver does. Default 0: injected results are one-off. */
void fake_set_poison_on_sticky(int on);

/* The next kernel launch (cuLaunchKernelEx or cuGraphLaunch) succeeds and
 * then "faults": the process is poisoned with `r`, so the wait after it
 * reports `r`, as a kernel storing to a bad address does. */
void fake_fault_next_launch(CUresult r);

/* Every launch from now starts a kernel that runs `ms` milliseconds of
 * real time (0: instant, the default). While one runs, cuStreamQuery says
 * CUDA_ERROR_NOT_READY, and cuStreamSynchronize, cuMemFree, cuMemFreeHost,
 * cuModuleUnload, cuCtxDestroy and cuDevicePrimaryCtxRelease block until it
 * has finished, as the real driver's do. */
void fake_set_kernel_duration_ms(double ms);

/* Every kernel started so far finishes now. */
void fake_finish_kernels(void);

/* [base, base + bytes) becomes memory that cuPointerGetAttributes describes
 * as device memory of the calling thread's current context, one allocation
 * that the fake never backs: for tests that plan shapes larger than host
 * memory could hold and launch nothing that touches them (copies and
 * memsets into it are refused as outside every allocation). At most 8;
 * forgotten by fake_reset. */
void fake_add_unbacked_range(CUdeviceptr base, size_t bytes);

/* ---------------------------------------------------------- fault injection */

/* The n-th driver call from now (1-based, every entry counts) returns r;
 * persistent: that call and every later one. Replaces any armed fault. */
void fake_fail_call(uint64_t n, CUresult r, int persistent);

/* The n-th call of entry `e` from now (1-based) returns r; persistent: that
 * call and every later call of `e`. Replaces any armed fault. */
void fake_fail_entry(fake_entry e, uint64_t n, CUresult r, int persistent);

/* Disarms the fault (counters stay). */
void fake_fail_clear(void);

/* Entry of the first call that returned an injected result, -1 if none yet;
 * fake_injected() counts such calls. */
int fake_failed_entry(void);
uint64_t fake_injected(void);

/* 1 if the entry releases an object (and so still releases under injection). */
int fake_entry_is_release(fake_entry e);

/* 1 while the calling thread is inside a fake entry or control function
 * (lets a malloc wrapper fail barecuda's allocations, not the fake's). */
int fake_in_driver(void);

/* ------------------------------------------------------------- accounting */

uint64_t fake_calls(void);                 /* every entry, since reset */
uint64_t fake_entry_calls(fake_entry e);
const char *fake_entry_name(fake_entry e); /* "cuMemAlloc" (the driver_list.h name) */

/* Entry of the k-th call since reset (1-based), -1 if out of range. */
int fake_call_entry(uint64_t k);

typedef struct fake_live_counts {
    int contexts;          /* own contexts */
    int primary_contexts;  /* devices whose primary context is retained */
    int allocations;       /* cuMemAlloc */
    int host_allocations;  /* cuMemHostAlloc */
    int streams, events, modules, graphs, graph_execs;
    int residents;         /* resident kernels still running (fake_resident.c) */
} fake_live_counts;

int fake_live_objects(void);              /* the sum of fake_live() */
void fake_live(fake_live_counts *out);
/* "contexts=1 allocations=2 ..." (non-zero ones only) for failure messages. */
const char *fake_live_string(void);

/* ------------------------------------------------------------- inspection */

CUcontext fake_current_context(void);     /* the calling thread's */

typedef struct fake_ctx_info {
    int device;        /* ordinal */
    unsigned flags;    /* cuCtxCreate flags (primary: 0) */
    int primary;
} fake_ctx_info;
int fake_ctx_query(CUcontext c, fake_ctx_info *out);   /* 1 if alive */
int fake_primary_refcount(int ordinal);

size_t fake_device_bytes_live(void);
size_t fake_host_bytes_live(void);
size_t fake_alloc_size(CUdeviceptr p);    /* size of the live allocation starting at p, else 0 */

typedef struct fake_stream_info {
    CUcontext ctx;
    unsigned flags;
    int priority;      /* after the driver's own clamping */
    int capturing;
} fake_stream_info;
int fake_stream_query(CUstream s, fake_stream_info *out);   /* 1 if alive */

typedef struct fake_module_record {
    const void *image;     /* last image given to cuModuleLoadDataEx */
    size_t size;           /* its size as the fake worked it out */
    unsigned num_options;
    CUjit_option options[16];
    CUresult result;
} fake_module_record;
const fake_module_record *fake_last_module(void);

/* 1 and the value if `f` is a live function. */
int fake_function_attr(CUfunction f, CUfunction_attribute attr, int *out_value);
const char *fake_function_name(CUfunction f);   /* NULL if not live */

#define FAKE_MAX_LAUNCH_ATTRS 8

typedef struct fake_launch {
    CUfunction func;
    char kernel[128];
    unsigned grid[3], block[3];
    unsigned smem;
    CUstream stream;
    unsigned num_attrs;
    CUlaunchAttribute attrs[FAKE_MAX_LAUNCH_ATTRS];
    unsigned cluster[3];   /* from CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, else 1,1,1 */
    void **kernel_params;
    size_t param_bytes;
    unsigned char params[FAKE_MAX_PARAM_BYTES];
    int captured;          /* 1: went into a capturing stream's graph */
} fake_launch;

const fake_launch *fake_last_launch(void);
uint64_t fake_launches(void);      /* launches executed (not captured) */

typedef struct fake_tensor_map_args {
    CUtensorMap *map;
    CUtensorMapDataType dtype;
    cuuint32_t rank;
    void *global_address;
    cuuint64_t global_dim[5];
    cuuint64_t global_strides[4];
    cuuint32_t box_dim[5];
    cuuint32_t element_strides[5];
    CUtensorMapInterleave interleave;
    CUtensorMapSwizzle swizzle;
    CUtensorMapL2promotion l2_promotion;
    CUtensorMapFloatOOBfill oob_fill;
    CUresult result;
} fake_tensor_map_args;

/* The encoded map's recognisable pattern (little-endian u64 words):
 * [0] global address, [1] FAKE_TMAP_MAGIC, [2] dtype | rank << 8 |
 * interleave << 16 | swizzle << 24 | l2 << 32 | oob << 40, [3..7] global dims,
 * [8..11] strides, [12] box dims 0..3 (u16 each), [13] box dim 4 | element
 * strides 0..2 << 16.., [14] element strides 3..4, [15] encode serial. */
#define FAKE_TMAP_MAGIC 0x50414d54454b4146ull /* "FAKETMAP" */
const fake_tensor_map_args *fake_last_tensor_map(void);
uint64_t fake_tensor_map_replaces(void);   /* successful cuTensorMapReplaceAddress */

typedef struct fake_kernel_node {
    CUfunction func;
    char kernel[128];      /* the function's name, when captured */
    unsigned grid[3], block[3];
    unsigned smem;
    size_t param_bytes;
    unsigned char params[FAKE_MAX_PARAM_BYTES];
    unsigned num_attrs;    /* launch attributes of a captured launch (stream capture keeps them) */
    CUlaunchAttribute attrs[FAKE_MAX_LAUNCH_ATTRS];
} fake_kernel_node;

/* Kernel node `index` (< 16) of the graph the last successful
 * cuStreamEndCapture returned, as captured (kept after the graph is
 * destroyed); NULL for another kind of node or past the end. */
const fake_kernel_node *fake_last_capture_node(int index);

/* ------------------------------------------------------ resident kernels */

/* Runs in a launched resident kernel's thread (fake_resident.c) for each
 * step, before the completion word is written: `params` is the kernel's
 * bc_resident_params. NULL (default): steps compute nothing. */
typedef void (*fake_resident_hook)(const void *params, uint64_t step);
void fake_set_resident_hook(fake_resident_hook fn);
/* 1: every resident kernel thread stops answering its doorbell (a step and
 * a stop stay pending) until set back to 0. */
void fake_set_resident_stall(int on);
uint64_t fake_resident_steps(void);   /* steps completed since reset */
uint64_t fake_resident_misuse(void);  /* frees of memory a running resident kernel used */

uint64_t fake_graph_launches(void);
uint64_t fake_graph_kernels_run(void);     /* kernel nodes executed by graph launches */
const fake_kernel_node *fake_last_exec_update(void);   /* last cuGraphExecKernelNodeSetParams */
uint64_t fake_exec_updates(void);
size_t fake_graph_node_count(CUgraph g);   /* 0 if not live */

#endif
