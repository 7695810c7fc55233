/* Status names, per-thread failure detail and the log callback. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

static const char *const status_names[BC_STATUS_COUNT_] = {
    [BC_OK] = "BC_OK: success",
    [BC_ERR_INVALID_ARGUMENT] = "BC_ERR_INVALID_ARGUMENT: invalid argument",
    [BC_ERR_OUT_OF_HOST_MEMORY] = "BC_ERR_OUT_OF_HOST_MEMORY: host allocation failed",
    [BC_ERR_INTERNAL] = "BC_ERR_INTERNAL: internal invariant broken",
    [BC_ERR_NO_DRIVER] = "BC_ERR_NO_DRIVER: libcuda.so.1 not found (no NVIDIA driver installed)",
    [BC_ERR_DRIVER_STUB] = "BC_ERR_DRIVER_STUB: libcuda is the CUDA toolkit's link stub, not a driver",
    [BC_ERR_DRIVER_TOO_OLD] = "BC_ERR_DRIVER_TOO_OLD: the driver is older than CUDA 12.0 or than the kernel image needs",
    [BC_ERR_MISSING_ENTRY_POINT] = "BC_ERR_MISSING_ENTRY_POINT: the driver lacks a required entry point",
    [BC_ERR_NO_DEVICE] = "BC_ERR_NO_DEVICE: no CUDA device with that ordinal",
    [BC_ERR_DRIVER] = "BC_ERR_DRIVER: a driver call failed",
    [BC_ERR_DEVICE_LOST] = "BC_ERR_DEVICE_LOST: the GPU reported a sticky fault; CUDA cannot recover it in this "
                           "process: restart the process",
    [BC_ERR_POOL_EXHAUSTED] = "BC_ERR_POOL_EXHAUSTED: no free block large enough",
    [BC_ERR_FOREIGN_POINTER] = "BC_ERR_FOREIGN_POINTER: pointer is outside the arena",
    [BC_ERR_DOUBLE_FREE] = "BC_ERR_DOUBLE_FREE: pointer is not a live allocation (double free?)",
    [BC_ERR_BAD_SIZE] = "BC_ERR_BAD_SIZE: zero or oversized request",
    [BC_ERR_TOO_MANY_BLOCKS] = "BC_ERR_TOO_MANY_BLOCKS: pool block table is full",
    [BC_ERR_TIMEOUT] = "BC_ERR_TIMEOUT: wait timed out; the work is still pending",
    [BC_ERR_NOT_READY] = "BC_ERR_NOT_READY: work not completed yet",
    [BC_ERR_FATBIN_CORRUPT] = "BC_ERR_FATBIN_CORRUPT: fatbin container is truncated or malformed",
    [BC_ERR_DIGEST_MISMATCH] = "BC_ERR_DIGEST_MISMATCH: embedded fatbin does not match its build digest",
    [BC_ERR_UNSUPPORTED_ARCH] = "BC_ERR_UNSUPPORTED_ARCH: no kernel image for this GPU architecture",
    [BC_ERR_MISSING_KERNEL] = "BC_ERR_MISSING_KERNEL: a required kernel is missing from the image",
    [BC_ERR_MODULE_LOAD] = "BC_ERR_MODULE_LOAD: the driver refused the kernel image",
    [BC_ERR_FATBIN_COMPRESSED] = "BC_ERR_FATBIN_COMPRESSED: image is compressed; only raw cubins load",
    [BC_ERR_VERIFY_FAILED] = "BC_ERR_VERIFY_FAILED: known-answer check failed",
    [BC_ERR_NULL_POINTER] = "BC_ERR_NULL_POINTER: a required device pointer is 0",
    [BC_ERR_MISALIGNED] = "BC_ERR_MISALIGNED: pointer alignment rule broken",
    [BC_ERR_BAD_LEADING_DIM] = "BC_ERR_BAD_LEADING_DIM: leading dimension too small or misaligned",
    [BC_ERR_K_ALIGNMENT] = "BC_ERR_K_ALIGNMENT: K rows are not a multiple of 16 bytes",
    [BC_ERR_BAD_SHAPE] = "BC_ERR_BAD_SHAPE: M, N or K is zero or too large",
    [BC_ERR_SIZE_OVERFLOW] = "BC_ERR_SIZE_OVERFLOW: operand extent overflows",
    [BC_ERR_UNSUPPORTED_TYPES] = "BC_ERR_UNSUPPORTED_TYPES: no kernel for this type combination",
    [BC_ERR_NO_KERNEL_FOR_DEVICE] = "BC_ERR_NO_KERNEL_FOR_DEVICE: no GEMM kernel for this device",
    [BC_ERR_TENSOR_MAP] = "BC_ERR_TENSOR_MAP: TMA tensor-map rule broken",
    [BC_ERR_GRAPH] = "BC_ERR_GRAPH: graph capture or instantiation failed",
    [BC_ERR_FILE_IO] = "BC_ERR_FILE_IO: the file could not be opened or read",
    [BC_ERR_NOT_REGULAR_FILE] = "BC_ERR_NOT_REGULAR_FILE: the path is not a regular file",
    [BC_ERR_FILE_TOO_LARGE] = "BC_ERR_FILE_TOO_LARGE: the file exceeds the size limit",
    [BC_ERR_PARAM_MISMATCH] = "BC_ERR_PARAM_MISMATCH: parameters do not match the kernel's signature",
    [BC_ERR_LAUNCH_CONFIG] = "BC_ERR_LAUNCH_CONFIG: grid, block or shared memory outside the limits",
    [BC_ERR_CLUSTER] = "BC_ERR_CLUSTER: the device cannot schedule this cluster shape",
    [BC_ERR_IN_USE] = "BC_ERR_IN_USE: still used by a plan or graph",
    [BC_ERR_NOT_SUPPORTED] = "BC_ERR_NOT_SUPPORTED: the driver or device lacks what this needs",
    [BC_ERR_OUT_OF_BOUNDS] = "BC_ERR_OUT_OF_BOUNDS: operand extent runs past its allocation",
    [BC_ERR_WRONG_DEVICE] = "BC_ERR_WRONG_DEVICE: pointer is not memory this device can access",
    [BC_ERR_OVERLAP] = "BC_ERR_OVERLAP: operands overlap; the result would depend on timing",
};

const char *bc_status_string(bc_status st)
{
    if ((unsigned)st >= BC_STATUS_COUNT_ || status_names[st] == NULL)
        return "BC_ERR_?: unknown status";
    return status_names[st];
}

static _Thread_local bc_error_detail last_error;
/* cu_name's own copy: the driver's names live in libcuda, which is
 * unloaded when the last device closes (or an open fails) */
static _Thread_local char last_cu_name[64];

bc_status bc_last_error(bc_error_detail *out_detail)
{
    if (out_detail == NULL)
        return BC_ERR_INVALID_ARGUMENT;
    *out_detail = last_error;
    if (out_detail->cu_name == NULL)
        out_detail->cu_name = "";
    if (out_detail->call == NULL)
        out_detail->call = "";
    if (out_detail->file == NULL)
        out_detail->file = "";
    return BC_OK;
}

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static bc_log_fn log_fn;
static void *log_user;
static bc_log_level log_max = BC_LOG_WARN;

void bc_set_log_callback(bc_log_fn fn, void *user, bc_log_level max_level)
{
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    log_max = max_level;
    pthread_mutex_unlock(&log_lock);
}

int bc__log_enabled(bc_log_level level)
{
    pthread_mutex_lock(&log_lock);
    int on = log_fn != NULL && level <= log_max;
    pthread_mutex_unlock(&log_lock);
    return on;
}

static void log_emit(bc_log_level level, const char *msg)
{
    pthread_mutex_lock(&log_lock);
    bc_log_fn fn = log_fn;
    void *user = log_user;
    int on = fn != NULL && level <= log_max;
    pthread_mutex_unlock(&log_lock);
    if (on)
        fn(user, level, msg);
}

void bc__log(bc_log_level level, const char *fmt, ...)
{
    if (!bc__log_enabled(level))
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    log_emit(level, buf);
}

bc_status bc__fail(bc_status st, int cu_result, const char *cu_name, const char *call,
                   const char *file, int line, const char *fmt, ...)
{
    bc_error_detail *e = &last_error;
    /* cu_name and the message's arguments may be the previous failure's own
     * copies (a re-recorded failure): read them all before writing either */
    char name[sizeof last_cu_name], message[sizeof e->message];
    snprintf(name, sizeof name, "%s", cu_name ? cu_name : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    e->status = st;
    e->cu_result = cu_result;
    memcpy(last_cu_name, name, sizeof name);
    e->cu_name = last_cu_name;
    e->call = call ? call : "";
    e->file = file ? file : "";
    e->line = line;
    memcpy(e->message, message, sizeof message);
    if (bc__log_enabled(BC_LOG_ERROR)) {
        char buf[768];
        snprintf(buf, sizeof buf, "%s [%s%s%s] at %s:%d: %s", bc_status_string(st), e->call,
                 cu_result ? " -> " : "", e->cu_name, e->file, line, e->message);
        log_emit(BC_LOG_ERROR, buf);
    }
    return st;
}
