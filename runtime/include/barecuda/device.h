/* barecuda — device, context and driver.
 *
 * Ownership: every handle barecuda returns is owned by the caller and
 * released with its matching destroy/close function; objects created from a
 * device (streams, events, plans, graphs, allocations) must be released before
 * the device is closed. bc_device_close releases whatever the caller forgot,
 * in reverse order of creation, so closing is always safe. If the closed
 * device's context was current on the calling thread, the thread is left with
 * no current context (bind another device before using it).
 *
 * Threads: a bc_device and the objects made from it may be used by one thread
 * at a time (the caller serialises). Different devices are independent and may
 * be used from different threads concurrently. Launching one plan from
 * several threads on different streams is safe: launches only read the plan.
 * Every call that reaches the driver requires the device's context to be
 * current on the calling thread: bc_device_open makes it current on the
 * opening thread; other threads call bc_device_bind_thread once.
 */
#ifndef BARECUDA_DEVICE_H
#define BARECUDA_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bc_device bc_device;

/* How the host waits for the GPU. SPIN polls (lowest latency, one core
 * busy), YIELD polls and yields the core between polls, BLOCK sleeps between
 * polls (least CPU; wake-up latency up to ~100 µs). For an owned context it
 * also sets the context's CU_CTX_SCHED_* flag. */
typedef enum bc_sched_policy {
    BC_SCHED_SPIN = 0,
    BC_SCHED_YIELD = 1,
    BC_SCHED_BLOCK = 2,
} bc_sched_policy;

typedef struct bc_device_config {
    int ordinal;                  /* CUDA device ordinal, 0-based */
    bc_sched_policy sched;        /* default wait policy (and owned-context flag) */
    int use_primary_context;      /* 1: retain the primary context (interop with the CUDA runtime);
                                     its scheduling flags are left as the process set them */
    size_t device_arena_bytes;    /* device pool size, allocated once at open; 0 = no device pool */
    size_t host_arena_bytes;      /* pinned host pool size; 0 = no host pool */
    uint32_t max_allocations;     /* live-allocation capacity per pool; 0 = 4096; at most
                                     2^24 (more is BC_ERR_INVALID_ARGUMENT); a pool's
                                     tables hold no more than its 256-byte units */
    int skip_kernel_load;         /* 1: do not load the embedded kernels (info-only opens) */
    uint32_t kernel_groups;       /* optional kernel groups to resolve at open (BC_KERNELS_*); 0: none */
} bc_device_config;

/* Optional kernel groups (bc_device_config.kernel_groups). Resolving a
 * kernel makes the driver load it, which is most of an open's module-load
 * time, so the kernels a device uses only for a feature you may not use are
 * resolved at open only when asked for; the others are always resolved. A
 * plan or executor that needs a group the device was opened without fails
 * at creation with BC_ERR_NO_KERNEL_FOR_DEVICE, naming the flag. A group
 * this GPU's image lacks is ignored (the feature then reports what it always
 * reports there). */
#define BC_KERNELS_RESIDENT 0x1u /* the resident executor's kernels (sm_90a) */
#define BC_KERNELS_PORTABLE 0x2u /* the portable mma.sync family where it is not the native one (sm_90a: named
                                    configurations "sm80_*"); on sm_80 and sm_120 images it is always resolved */
#define BC_KERNELS_STREAM_K 0x4u /* the whole-tile kernels that take a last partial round by stream-K (sm_90a;
                                    bc_gemm_desc.stream_k) */
#define BC_KERNELS_ALL (BC_KERNELS_RESIDENT | BC_KERNELS_PORTABLE | BC_KERNELS_STREAM_K)

/* Contract: fills *out_cfg with the defaults: ordinal 0, BC_SCHED_SPIN, an
 * owned context, 256 MiB device arena, 16 MiB pinned host arena, 4096
 * allocations, kernels loaded, no optional kernel group. Never fails except
 * for NULL (returns BC_ERR_INVALID_ARGUMENT). */
bc_status bc_device_config_default(bc_device_config *out_cfg);

/* Contract: loads the driver (once per process, reference counted), creates
 * or retains the context for cfg->ordinal, makes it current on the calling
 * thread, allocates both arenas, verifies and loads the embedded kernels for
 * this device's architecture and resolves every kernel but the optional
 * groups not asked for (cfg->kernel_groups; an unknown bit is
 * BC_ERR_INVALID_ARGUMENT). Everything that can fail at run time fails here. On success *out_dev is a new handle; on
 * failure *out_dev is untouched, nothing is leaked, and bc_last_error() says
 * which step failed. `cfg == NULL` means the defaults. */
bc_status bc_device_open(const bc_device_config *cfg, bc_device **out_dev);

/* Contract: destroys everything created from `dev` that is still alive
 * (resident executors, graphs, plans, kernel plans, events, streams, modules,
 * in that order), unloads the kernels, frees the arenas, releases the
 * context and drops the driver reference.
 * Closing does NOT abandon running work: the driver makes freeing device
 * memory and destroying the context wait until every kernel of the context
 * has finished (measured on an H100: a 6 s kernel held cuMemFree for 6 s).
 * So a kernel that never finishes makes this call block for ever; use
 * bc_device_close_timeout when that must not happen. On a lost device
 * (BC_ERR_DEVICE_LOST) it returns at once: the driver refuses the waits.
 * Resident executors are stopped first (bc_resident_destroy); if one's
 * kernel does not stop within its bound, or its end cannot be confirmed
 * (the driver's stream queries keep failing), the device is abandoned as by
 * bc_device_close_timeout (a BC_LOG_WARN message says so) instead of
 * blocking. Leaves bc_last_error() alone. NULL is a no-op. */
void bc_device_close(bc_device *dev);

/* Contract: bc_device_close with a bound. First stops the resident
 * executors (each as bc_resident_destroy, within what is left of the
 * bound and at most BC_RESIDENT_STOP_BOUND_NS; one whose kernel does not
 * stop, or whose end the driver would not confirm, makes it
 * BC_ERR_TIMEOUT, below),
 * then waits until all work of dev's context has finished (every stream
 * of the context: barecuda's, the caller's, the legacy stream), for at
 * most `timeout_ns` nanoseconds (CLOCK_MONOTONIC) in all: cuCtxSynchronize
 * on a helper thread, which the call leaves blocked in the driver when the
 * bound runs out. When no thread can be started, or the bound is 0 or
 * spent stopping executors, it looks at the streams barecuda knows instead
 * (those made by bc_stream_create or wrapped by bc_stream_wrap, and its own
 * copy stream: polled until the bound, or looked at once when none is
 * left); other work of the context then makes the close below wait for it,
 * as bc_device_close does. Then:
 * - all idle: closes as bc_device_close and returns BC_OK;
 * - the device was, or turned out, lost: closes (nothing waits on a lost
 *   device) and returns BC_ERR_DEVICE_LOST;
 * - still busy at the deadline: returns BC_ERR_TIMEOUT without blocking.
 *   The device is marked hung and abandoned: barecuda frees its own host
 *   memory (plans, stream and event objects, pool tables) and leaves every
 *   driver object (context, arenas, module, streams, events, graphs) to the
 *   driver, which reclaims them when the process ends; the running kernels
 *   go on. The driver stays loaded. Opening another device afterwards may
 *   work, sharing the GPU with the abandoned kernels; the only recovery that
 *   returns the GPU to a known state is ending the process (README, "After
 *   a fault or a hang").
 * In every case `dev` is invalid afterwards, as are the objects made from
 * it. NULL returns BC_OK. */
bc_status bc_device_close_timeout(bc_device *dev, uint64_t timeout_ns);

/* Contract: makes dev's context current on the calling thread. Needed once
 * per thread (other than the opening one) before that thread calls barecuda
 * functions on objects of `dev`. */
bc_status bc_device_bind_thread(bc_device *dev);

typedef struct bc_device_info {
    char name[256];
    int ordinal;
    int cc_major, cc_minor;        /* compute capability */
    int sm_count;
    int smem_per_block_optin;      /* bytes of shared memory a block may opt in to */
    int l2_bytes;
    size_t total_mem_bytes;
    int driver_version;            /* e.g. 13000 for CUDA 13.0 */
    int stream_priority_least;     /* numerically largest = lowest priority */
    int stream_priority_greatest;  /* numerically smallest = highest priority */
    bc_sched_policy sched;         /* the wait policy in effect */
    int primary_context;           /* 1 if the primary context is in use */
    const char *image_arch;        /* kernel image loaded, e.g. "sm_90a"; "" if none; points
                                      into the device: valid until bc_device_close */
    int integrated;                /* 1: an integrated GPU (Jetson Orin/Thor, GB10) sharing DRAM
                                      with the CPU (CU_DEVICE_ATTRIBUTE_INTEGRATED) */
} bc_device_info;

/* Contract: fills *out_info from values cached at open; no driver call. */
bc_status bc_device_query(const bc_device *dev, bc_device_info *out_info);

/* Wall-clock time of each phase of bc_device_open, in microseconds
 * (CLOCK_MONOTONIC). A phase that did not run (driver already loaded by an
 * earlier open, kernels skipped) reads 0. */
typedef struct bc_open_timings {
    double dlopen_us;       /* dlopen + entry-point resolution */
    double cuinit_us;       /* cuInit */
    double context_us;      /* context create/retain + device queries */
    double arenas_us;       /* arena allocation */
    double image_check_us;  /* fatbin parse + digest + image selection (and the optional groups' cubin's, when asked for) */
    double module_load_us;  /* cuModuleLoadDataEx + kernel resolution + attributes (both modules, with optional groups) */
    double total_us;        /* the whole open */
} bc_open_timings;

/* Contract: the phase times recorded by bc_device_open; no driver call. */
bc_status bc_device_open_timings(const bc_device *dev, bc_open_timings *out_timings);

/* Contract: reports the driver's CUDA version without opening a device (loads
 * the driver if needed and releases it). BC_ERR_NO_DRIVER / _DRIVER_STUB /
 * _DRIVER_TOO_OLD as for bc_device_open. */
bc_status bc_driver_version(int *out_version);

/* Contract: number of CUDA devices visible to the driver. */
bc_status bc_device_count(int *out_count);

#ifdef __cplusplus
}
#endif
#endif
