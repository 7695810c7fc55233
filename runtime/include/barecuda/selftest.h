/* barecuda — known-answer checks for boot scripts.
 *
 * A boot check proves the whole path works on this machine: the image was
 * loaded, a kernel launches, and its result reaches the host intact. Each
 * check allocates what it needs from the device's pools and frees it again.
 */
#ifndef BARECUDA_SELFTEST_H
#define BARECUDA_SELFTEST_H

#include <stdint.h>

#include "device.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Elements the smoke check writes and verifies (uint32_t each). */
#define BC_SMOKE_ELEMENTS (1u << 16)

/* The seed the smoke check hands its kernel (reported in bc_smoke_report). */
#define BC_SMOKE_SEED 0xB0075EEDu

/* Upper bound on each wait of the smoke check, in nanoseconds. */
#define BC_SMOKE_TIMEOUT_NS 2000000000ull

typedef struct bc_smoke_report {
    uint32_t elements;      /* elements verified */
    uint32_t seed;          /* seed handed to the kernel */
    double first_launch_us; /* cuLaunchKernelEx until the stream is idle (CLOCK_MONOTONIC) */
    double verify_us;       /* copy back to the host + comparison on the CPU */
} bc_smoke_report;

/* Contract: runs the smoke kernel (bc_smoke_checksum) over
 * BC_SMOKE_ELEMENTS uint32_t in a block from the device pool: fills the
 * block with 0xFF bytes, launches on `stream`, copies the result back (into
 * the pinned host pool when there is one, else a malloc'ed buffer) and
 * compares every element with the value the CPU computes. Waits are bounded
 * by BC_SMOKE_TIMEOUT_NS. Needs a device opened with kernels loaded and a
 * device pool of at least 256 KiB.
 * BC_OK: all elements matched and *out_report is filled (may be NULL).
 * BC_ERR_INVALID_ARGUMENT for a NULL handle or a stream of another device.
 * BC_ERR_VERIFY_FAILED: a wrong element (bc_last_error() names the first bad
 * index, the expected and the actual value). BC_ERR_MISSING_KERNEL when the
 * device was opened with skip_kernel_load; BC_ERR_TIMEOUT, BC_ERR_DEVICE_LOST
 * or BC_ERR_DRIVER from the launch and the waits; pool errors from the
 * allocation. On failure *out_report is untouched and everything the check
 * allocated is freed (after a timeout the block stays allocated while the
 * kernel may still write to it; bc_device_close waits for the kernel,
 * bc_device_close_timeout does not). */
bc_status bc_selftest_smoke(bc_device *dev, bc_stream *stream, bc_smoke_report *out_report);

/* Contract: queues the smoke kernel over zero elements on `stream` with one
 * cuLaunchKernelEx (grid 1, block 32): a launch that does no work, the floor
 * against which launch-path costs are measured (barecuda latency). Needs the
 * kernels loaded (BC_ERR_MISSING_KERNEL otherwise). */
bc_status bc_selftest_empty_launch(bc_stream *stream);

/* The known-answer GEMM: BC_GEMM_CHECK_M x _N x _K (ragged: one partial
 * tile), bf16 inputs of the form i/4 with |i| <= 4, fp32 output, so every
 * product and every partial sum is exact in fp32 and the answer, computed
 * on the CPU in integers, must match bit for bit. */
#define BC_GEMM_CHECK_M 72
#define BC_GEMM_CHECK_N 136
#define BC_GEMM_CHECK_K 64

typedef struct bc_gemm_check_report {
    double plan_us;   /* bc_gemm_plan_create (validation, tensor maps) */
    double launch_us; /* bc_gemm_launch until the stream is idle */
    double verify_us; /* copy back + exact comparison with the CPU */
    uint32_t elements; /* elements compared */
} bc_gemm_check_report;

/* Contract: runs the known-answer GEMM above through the public plan API on
 * `stream` (output poisoned first), copies D back and requires every element
 * to equal the CPU's exact answer. Device buffers come from the device pool
 * (about 64 KiB), host staging from malloc; all are freed again, except
 * after BC_ERR_TIMEOUT, when the device buffers stay allocated (the kernel
 * may still use them) until bc_device_close. Waits are bounded by
 * BC_SMOKE_TIMEOUT_NS. BC_OK: *out_report filled (may be NULL).
 * BC_ERR_VERIFY_FAILED: bc_last_error() names the first wrong element.
 * BC_ERR_INVALID_ARGUMENT for a NULL handle or a stream of another device.
 * Otherwise the status of the failing plan, launch, wait or pool call; on
 * failure *out_report is untouched. */
bc_status bc_selftest_gemm(bc_device *dev, bc_stream *stream, bc_gemm_check_report *out_report);

#ifdef __cplusplus
}
#endif
#endif
