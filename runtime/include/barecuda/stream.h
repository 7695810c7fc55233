/* barecuda — streams, bounded waits and events. */
#ifndef BARECUDA_STREAM_H
#define BARECUDA_STREAM_H

#include <stdint.h>

#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CUstream without requiring cuda.h (the same typedef cuda.h uses). */
struct CUstream_st;
typedef struct CUstream_st *CUstream;

typedef struct bc_stream bc_stream;
typedef struct bc_event bc_event;

#define BC_WAIT_FOREVER UINT64_MAX

/* Contract: creates a non-blocking stream (it does not synchronise with the
 * legacy NULL stream). `priority` is clamped into the device's range
 * (bc_device_info.stream_priority_greatest..least); the value in effect is
 * written to *out_effective_priority when that pointer is not NULL. The wait
 * policy starts as the device's. */
bc_status bc_stream_create(bc_device *dev, int priority, bc_stream **out_stream,
                           int *out_effective_priority);

/* Contract: wraps an existing CUstream of dev's context without taking
 * ownership: bc_stream_destroy forgets it and never destroys `s`. A stream
 * of another context is BC_ERR_INVALID_ARGUMENT (one cuStreamGetCtx asks);
 * a driver refusal of that question is BC_ERR_DRIVER (the driver leaves a
 * destroyed stream's handle undefined: it may not be refused);
 * BC_ERR_DEVICE_LOST after a sticky fault. NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are taken as they
 * are: they name the default stream of whatever context is current at each
 * call, so bind dev's (bc_device_bind_thread) before using them. */
bc_status bc_stream_wrap(bc_device *dev, CUstream s, bc_stream **out_stream);

/* Contract: destroys an owned stream (queued work still completes) or forgets
 * a wrapped one. NULL is a no-op. */
void bc_stream_destroy(bc_stream *stream);

/* Contract: the raw CUstream, for interop. */
CUstream bc_stream_handle(const bc_stream *stream);

/* Contract: sets how bc_stream_wait waits on this stream (see bc_sched_policy). */
bc_status bc_stream_set_wait_policy(bc_stream *stream, bc_sched_policy policy);

/* Contract: waits until all work queued on `stream` has completed, or until
 * `timeout_ns` nanoseconds (CLOCK_MONOTONIC) have passed. BC_OK when done,
 * BC_ERR_TIMEOUT when the time ran out (the work is still queued: the caller
 * may wait again; bc_device_close would wait for it too, while
 * bc_device_close_timeout abandons the device), BC_ERR_DEVICE_LOST when a
 * kernel faulted (the GPU is lost to the process: restart it). BC_WAIT_FOREVER waits without a limit. The timeout is
 * checked between polls, so it fires at most one poll interval late
 * (SPIN/YIELD: one cuStreamQuery; BLOCK: up to 100 µs of sleep). */
bc_status bc_stream_wait(bc_stream *stream, uint64_t timeout_ns);

/* Contract: BC_OK if all work on the stream has completed, BC_ERR_NOT_READY
 * if not; never blocks. */
bc_status bc_stream_query(bc_stream *stream);

/* Contract: creates an event that records timing. */
bc_status bc_event_create(bc_device *dev, bc_event **out_event);

/* Contract: destroys the event. NULL is a no-op. */
void bc_event_destroy(bc_event *event);

/* Contract: records `event` at the current tail of `stream`.
 * BC_ERR_INVALID_ARGUMENT for a NULL handle or a stream of another device
 * (bc_device handle) than the event's (argument errors are reported before
 * a loss); BC_ERR_DEVICE_LOST after a sticky fault; BC_ERR_DRIVER if the
 * driver refuses the record. */
bc_status bc_event_record(bc_event *event, bc_stream *stream);

/* Contract: milliseconds between two recorded, completed events, with the
 * driver's resolution (~0.5 µs), in *out_ms (written only on success).
 * BC_ERR_INVALID_ARGUMENT for a NULL argument or events of two devices
 * (bc_device handles); BC_ERR_DEVICE_LOST after a sticky fault;
 * BC_ERR_NOT_READY if either has not completed; BC_ERR_DRIVER for another
 * refusal (an event never recorded). */
bc_status bc_event_elapsed_ms(const bc_event *start, const bc_event *end, float *out_ms);

#ifdef __cplusplus
}
#endif
#endif
