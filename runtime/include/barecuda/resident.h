/* barecuda — the resident executor: a fixed sequence of GEMM plans run by
 * one persistent kernel, step after step, with no launch per step.
 *
 * bc_resident_start launches the kernel once. Each bc_resident_step is one
 * host store to a doorbell in mapped pinned memory and a poll of a
 * completion count the kernel writes back there: no driver call. Between
 * steps the host rewrites the *contents* of the buffers the plans name
 * (inputs, weights); the pointers themselves are fixed while the executor
 * runs (stop, re-point the plans, create a new executor).
 *
 * The kernel runs the same main loop and epilogue as the launched Hopper
 * GEMM, so each plan's output is byte-identical to its non-resident launch.
 * A plan that reads what an earlier plan of the sequence writes is separated
 * from it by a grid-wide barrier; independent plans share one.
 */
#ifndef BARECUDA_RESIDENT_H
#define BARECUDA_RESIDENT_H

#include <stdint.h>

#include "device.h"
#include "gemm.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bc_resident bc_resident;

/* One copy the executor's kernel makes itself each step, between mapped
 * pinned host memory and device memory, with 16-byte loads and stores: a
 * step's inputs (host -> device, before the first plan) and outputs
 * (device -> host, after the last plan) can live in host memory that the
 * control loop reads and writes directly, with no copy call per step. */
typedef struct bc_resident_copy {
    void *host;      /* inside this device's pinned host pool (bc_host_alloc), 16-byte aligned */
    bc_devptr dev;   /* memory this device's kernels can address (device memory, or host memory
                        apart from `host`), 16-byte aligned */
    size_t bytes;    /* a multiple of 16, at least 16 */
} bc_resident_copy;

typedef struct bc_resident_config {
    uint32_t sm_count;     /* CTAs the executor holds, one per SM; 0 = the default (README) */
    uint32_t spin_ns;      /* after each step, poll the doorbell without sleeping this long */
    uint32_t max_sleep_ns; /* idle back-off: the longest sleep between two polls */
    const bc_resident_copy *inputs;  /* copied host -> device at the start of each step; NULL: none */
    uint32_t input_count;
    const bc_resident_copy *outputs; /* copied device -> host at the end of each step; NULL: none */
    uint32_t output_count;
} bc_resident_config;

/* At most this many operations (plans + inputs + outputs) per executor. */
#define BC_RESIDENT_MAX_OPERATIONS 16

/* Contract: fills *out_cfg with the defaults (README, "Resident executor"). */
bc_status bc_resident_config_default(bc_resident_config *out_cfg);

/* Contract: builds the program for plans[0..count-1] (run in that order each
 * step, after cfg->inputs and before cfg->outputs): their tensor maps and
 * epilogues in one device block, the barriers between dependent operations,
 * the doorbell and completion words in the pinned host pool. The plans must
 * be sm_90a plans that run in one resident kernel: one whole-tile
 * configuration (every one but sm90_128x256 and sm90_64x256), or sm90_64x32m16 and its
 * split-K and short-K twins sm90_64x32m16s and sm90_64x32m16t mixed, or
 * sm90_64x32 and its split-K and short-K twins sm90_64x32s and sm90_64x32t
 * mixed, or sm90_128x64 and its
 * short-K twin sm90_128x64t mixed; GEMV plans (sm90_gemv) alone or beside
 * sm90_128x64 and sm90_128x64t plans (BC_ERR_INVALID_ARGUMENT naming the
 * first that is not);
 * they may be destroyed afterwards. A split-K plan's partials go through
 * device memory the executor allocates (tile x split x 2 KiB, 8 KiB for
 * sm90_64x32s, 4 KiB for a GEMV plan's run of rows; bc_resident_info.partial_bytes)
 * and are added in the plan's order,
 * so its results are a launch's, bit for bit. cfg may be NULL
 * (the defaults). BC_ERR_NO_KERNEL_FOR_DEVICE when the device was opened
 * without BC_KERNELS_RESIDENT in bc_device_config.kernel_groups (the
 * executor's kernels are resolved at open only when asked for).
 * BC_ERR_INVALID_ARGUMENT for a cfg->sm_count above the device's SMs or a
 * cfg->max_sleep_ns above 1 ms; BC_ERR_LAUNCH_CONFIG when the device cannot
 * keep the CTAs resident at once; BC_ERR_NOT_SUPPORTED without cooperative
 * launch; BC_ERR_INVALID_ARGUMENT naming host_arena_bytes on a device opened
 * without a pinned host pool. Each copy is checked as a plan's operands
 * are: BC_ERR_NULL_POINTER for a NULL side, BC_ERR_BAD_SIZE for 0 bytes,
 * BC_ERR_MISALIGNED, BC_ERR_OUT_OF_BOUNDS, BC_ERR_WRONG_DEVICE, and
 * BC_ERR_OVERLAP when its two sides overlap. A plan whose D, or an input
 * copy whose device side, lies outside the device arena (it may be host
 * memory) makes the kernel release each step's completion at system
 * scope, as an output copy does. Nothing is launched. On failure *out_res
 * is untouched and nothing is leaked. */
bc_status bc_resident_create(bc_device *dev, const bc_gemm_plan *const *plans, int count,
                             const bc_resident_config *cfg, bc_resident **out_res);

/* Contract: launches the persistent kernel on `stream` (which it occupies
 * until bc_resident_stop; the stream must outlive the run), cooperatively,
 * cfg.sm_count CTAs. BC_ERR_INVALID_ARGUMENT if already started, if the
 * stream belongs to another device, if it wraps a default stream (NULL,
 * CU_STREAM_LEGACY or CU_STREAM_PER_THREAD: shared, and the kernel would
 * hold back all other work on it), or if another running executor holds
 * it (each executor needs its own stream). A stopped executor may be
 * started again; step numbering continues. */
bc_status bc_resident_start(bc_resident *res, bc_stream *stream);

/* Contract: rings the doorbell for one step of the whole sequence and
 * returns without waiting. No driver call. BC_ERR_NOT_READY if the previous
 * step has not completed yet (wait for it first); BC_ERR_INVALID_ARGUMENT
 * if the executor is not started, or is stopping (a bc_resident_stop that
 * did not return BC_OK: its kernel leaves once the rung steps are done, so
 * a step rung now would never run); BC_ERR_DEVICE_LOST once the process
 * has lost its GPU. */
bc_status bc_resident_ring(bc_resident *res);

/* Contract: waits until the last rung step has completed, or `timeout_ns`
 * has passed (BC_ERR_TIMEOUT: the step is still pending; wait again, or
 * stop), polling with the start stream's wait policy. No driver call while
 * the step completes in time; when the bound expires, one stream query
 * tells a faulted kernel (BC_ERR_DEVICE_LOST) from a slow one. A step that
 * can no longer complete because a stop found the kernel ended by a fault,
 * or after the process lost its GPU, is BC_ERR_DEVICE_LOST at once
 * (BC_ERR_INVALID_ARGUMENT if the kernel ended otherwise). */
bc_status bc_resident_wait(bc_resident *res, uint64_t timeout_ns);

/* Contract: bc_resident_ring then bc_resident_wait. */
bc_status bc_resident_step(bc_resident *res, uint64_t timeout_ns);

/* Contract: tells the kernel to exit after any step in progress and waits,
 * bounded by timeout_ns, for its stream to drain. BC_ERR_TIMEOUT if it did
 * not end in time: it is still running; stop again, or close the device
 * (README, "Resident executor"). Until a stop returns BC_OK the executor
 * is stopping: bc_resident_ring refuses new steps. BC_OK at once if not
 * running. */
bc_status bc_resident_stop(bc_resident *res, uint64_t timeout_ns);

typedef struct bc_resident_info {
    const char *config;     /* the resident kernel's whole-tile configuration (sm90_64x32m16 also when its split-K or
                               short-K twin is among the plans, or the plans are all GEMV plans, whose
                               kernel it is; likewise sm90_64x32 and sm90_128x64) */
    uint32_t sm_count;      /* CTAs held */
    uint32_t plans;
    uint32_t barriers;      /* grid-wide barriers per step between operations (beyond the start and end of a step) */
    uint32_t operations;    /* plans + inputs + outputs */
    uint64_t partial_bytes; /* device memory for the split-K plans' partials (0 without them) */
    uint64_t steps_done;    /* completion count */
    int running;
} bc_resident_info;

/* The bound bc_resident_destroy and bc_device_close give a running kernel
 * to stop: 1 s. */
#define BC_RESIDENT_STOP_BOUND_NS 1000000000ull

/* Contract: describes the executor; reads the completion word, no driver call. */
bc_status bc_resident_query(const bc_resident *res, bc_resident_info *out_info);

/* Contract: stops the kernel if it runs (bounded as bc_resident_stop, for
 * BC_RESIDENT_STOP_BOUND_NS), frees everything. A kernel that did not stop,
 * or whose end the driver would not confirm (its stream's queries kept
 * failing), keeps its memory, and bc_device_close then abandons the device
 * (see its contract) rather than wait for the kernel.
 * NULL is a no-op. */
void bc_resident_destroy(bc_resident *res);

#ifdef __cplusplus
}
#endif
#endif
