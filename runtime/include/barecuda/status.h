/* barecuda — status codes, failure detail and the log callback.
 *
 * Every fallible function returns a bc_status. BC_OK is 0; every other value
 * names one failure class. The numbers are part of the ABI: new codes are
 * only ever appended.
 */
#ifndef BARECUDA_STATUS_H
#define BARECUDA_STATUS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum bc_status {
    BC_OK = 0,
    /* generic */
    BC_ERR_INVALID_ARGUMENT = 1,   /* a NULL handle/out pointer or a value outside its documented range */
    BC_ERR_OUT_OF_HOST_MEMORY = 2, /* malloc failed during init or plan creation */
    BC_ERR_INTERNAL = 3,           /* a broken invariant inside barecuda: please report */
    /* driver */
    BC_ERR_NO_DRIVER = 10,           /* libcuda.so.1 could not be loaded */
    BC_ERR_DRIVER_STUB = 11,         /* the loaded libcuda is the toolkit's link stub, not a driver */
    BC_ERR_DRIVER_TOO_OLD = 12,      /* driver older than CUDA 12.0, or than the selected image needs */
    BC_ERR_MISSING_ENTRY_POINT = 13, /* the driver lacks an entry point barecuda needs */
    BC_ERR_NO_DEVICE = 14,           /* no CUDA device, or the ordinal is out of range */
    BC_ERR_DRIVER = 15,              /* a driver call failed; bc_last_error() names it */
    BC_ERR_DEVICE_LOST = 16,         /* sticky fault (illegal address, launch failure...): the GPU is lost to
                                        the whole process; only a process restart recovers (README) */
    /* memory pools */
    BC_ERR_POOL_EXHAUSTED = 20,   /* no free block large enough in the arena */
    BC_ERR_FOREIGN_POINTER = 21,  /* pointer does not lie inside this device's arena */
    BC_ERR_DOUBLE_FREE = 22,      /* pointer lies in the arena but is not a live allocation's start */
    BC_ERR_BAD_SIZE = 23,         /* zero or larger-than-arena request */
    BC_ERR_TOO_MANY_BLOCKS = 24,  /* the pool's block table (fixed at open) is full */
    /* streams */
    BC_ERR_TIMEOUT = 30,   /* a bounded wait expired; the work is still queued or running
                              (bc_device_close_timeout: the device was abandoned) */
    BC_ERR_NOT_READY = 31, /* the queried work has not completed yet */
    /* loader */
    BC_ERR_FATBIN_CORRUPT = 40,    /* the container is truncated, malformed or overlapping */
    BC_ERR_DIGEST_MISMATCH = 41,   /* the embedded fatbin does not hash to its build-time digest */
    BC_ERR_UNSUPPORTED_ARCH = 42,  /* no image in the fatbin runs on this device */
    BC_ERR_MISSING_KERNEL = 43,    /* the loaded image lacks a kernel the manifest requires */
    BC_ERR_MODULE_LOAD = 44,       /* the driver refused the image; bc_last_error() carries its log */
    BC_ERR_FATBIN_COMPRESSED = 45, /* the selected image is compressed; barecuda loads raw cubins only */
    BC_ERR_VERIFY_FAILED = 46,     /* a known-answer check computed the wrong result */
    /* GEMM plan validation */
    BC_ERR_NULL_POINTER = 50,       /* a required device pointer is 0 */
    BC_ERR_MISALIGNED = 51,         /* a pointer breaks its alignment rule (16 B for A/B/C/D, 4 B for bias) */
    BC_ERR_BAD_LEADING_DIM = 52,    /* a leading dimension is smaller than the row (or A/B rows not 16-byte aligned) */
    BC_ERR_K_ALIGNMENT = 53,        /* K * sizeof(input) is not a multiple of 16 bytes */
    BC_ERR_BAD_SHAPE = 54,          /* M, N or K is zero or above 2^31 - 1 */
    BC_ERR_SIZE_OVERFLOW = 55,      /* an operand's extent overflows 64-bit byte arithmetic */
    BC_ERR_UNSUPPORTED_TYPES = 56,  /* the input/output type combination has no kernel */
    BC_ERR_NO_KERNEL_FOR_DEVICE = 57, /* the device's architecture has no GEMM kernel */
    BC_ERR_TENSOR_MAP = 58,         /* a TMA tensor-map rule is broken; the log names the rule */
    BC_ERR_GRAPH = 59,              /* graph capture/instantiation state error */
    /* modules, kernels, launch plans */
    BC_ERR_FILE_IO = 60,            /* a file could not be opened or read completely */
    BC_ERR_NOT_REGULAR_FILE = 61,   /* the path names a directory, device, FIFO or socket */
    BC_ERR_FILE_TOO_LARGE = 62,     /* the file exceeds the stated size limit */
    BC_ERR_PARAM_MISMATCH = 63,     /* kernel parameters do not match the kernel's signature */
    BC_ERR_LAUNCH_CONFIG = 64,      /* grid, block or shared memory outside the kernel's or device's limits */
    BC_ERR_CLUSTER = 65,            /* a cluster shape the device cannot schedule for this kernel */
    BC_ERR_IN_USE = 66,             /* the object is still used by another (a module by a plan or graph) */
    BC_ERR_NOT_SUPPORTED = 67,      /* the driver or device lacks what this call needs */
    /* operand checks */
    BC_ERR_OUT_OF_BOUNDS = 68,      /* an operand's extent runs past its allocation or pool block */
    BC_ERR_WRONG_DEVICE = 69,       /* a pointer is not memory this device can read or write */
    BC_ERR_OVERLAP = 70,            /* operands overlap so that the result would depend on timing */
    BC_STATUS_COUNT_ /* not a status: keeps the table honest */
} bc_status;

/* Contract: returns a static, NUL-terminated, human-readable name for `st`
 * ("BC_ERR_TIMEOUT: ..."). Never NULL; unknown values give "BC_ERR_?". */
const char *bc_status_string(bc_status st);

/* Detail of the most recent failure on the calling thread. */
typedef struct bc_error_detail {
    bc_status status;       /* the status that was returned */
    int cu_result;          /* CUresult of the failing driver call, 0 if none */
    const char *cu_name;    /* e.g. "CUDA_ERROR_OUT_OF_MEMORY", or ""; barecuda's
                               copy, kept by the calling thread: valid until its
                               next failure or its exit */
    const char *call;       /* driver entry point or barecuda rule, or "" */
    const char *file;       /* source file of the failing site */
    int line;               /* source line of the failing site */
    char message[512];      /* formatted explanation, NUL-terminated */
} bc_error_detail;

/* Contract: copies the calling thread's last failure detail into *out_detail
 * and returns BC_OK. If the thread has had no failure, out_detail->status is
 * BC_OK and the strings are empty. Returns BC_ERR_INVALID_ARGUMENT if
 * out_detail is NULL. Failures are recorded per thread and never cleared by
 * successful calls. */
bc_status bc_last_error(bc_error_detail *out_detail);

typedef enum bc_log_level {
    BC_LOG_ERROR = 0,
    BC_LOG_WARN = 1,
    BC_LOG_INFO = 2,
    BC_LOG_DEBUG = 3,
} bc_log_level;

typedef void (*bc_log_fn)(void *user, bc_log_level level, const char *message);

/* Contract: installs a process-wide log callback that receives every message
 * barecuda would otherwise have printed (barecuda itself never prints).
 * `fn == NULL` removes it. Messages above `max_level` are not formatted at
 * all. The callback may be invoked from any thread that calls barecuda and
 * must not call back into barecuda. Safe to call at any time. */
void bc_set_log_callback(bc_log_fn fn, void *user, bc_log_level max_level);

#ifdef __cplusplus
}
#endif
#endif
