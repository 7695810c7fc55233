/* Internal: the driver function table, the one path to libcuda.
 *
 * bc__drv points at the table while at least one user holds a reference
 * (bc__driver_acquire / bc__driver_release). Every driver call in barecuda is
 * written BC_CU(entry, args...), which calls through the table and maps the
 * CUresult to a bc_status, recording the call site on failure (release calls
 * on unwinding and close paths: BC_CU_CLEANUP, which only logs).
 */
#ifndef BC_RUNTIME_DRIVER_H
#define BC_RUNTIME_DRIVER_H

#include <cuda.h>
#include <cudaTypedefs.h>

#include "barecuda/status.h"

/* The CUDA ABI version asked of cuGetProcAddress for every required entry:
 * the 12.0 floor. driver_list.h pairs each entry with its PFN typedef for
 * it; its optional entries (XO) are asked at their own version and are NULL
 * in the table when the driver lacks them. */
#define BC_CUDA_ABI_VERSION 12000

typedef struct bc__driver {
#define X(name, ver) PFN_##name##_v##ver name;
#include "driver_list.h"
#undef X
} bc__driver;

extern const bc__driver *bc__drv;

typedef struct bc__driver_timing {
    double dlopen_us; /* dlopen + resolution; 0 if already loaded */
    double cuinit_us; /* cuInit; 0 if already initialised */
} bc__driver_timing;

/* Takes a reference on the driver, loading and initialising it on the first
 * one: dlopen("libcuda.so.1"), cuGetProcAddress_v2 for every entry in
 * driver_list.h at BC_CUDA_ABI_VERSION (optional ones at theirs, NULL when
 * missing), version check, cuInit(0).
 * Serialised by a process-wide mutex. out_timing may be NULL. */
bc_status bc__driver_acquire(bc__driver_timing *out_timing);

/* The CUDA version the driver reported at the first acquire
 * (cuDriverGetVersion: 12060 for CUDA 12.6); 0 before any. */
int bc__driver_version(void);

/* Drops a reference; the last one forgets the table and dlcloses. */
void bc__driver_release(void);

/* Test hook: while `fake` is non-NULL, bc__driver_acquire installs it instead
 * of loading libcuda (cuInit and the version check still go through it).
 * Must be called with no reference held. Also forgets a recorded loss
 * (bc__lost_reset): a fake driver starts a healthy process. */
void bc__driver_set_override(const bc__driver *fake);

/* Test hook: path of the library to dlopen instead of "libcuda.so.1" (NULL
 * restores the default). Lets tests point at a missing file or the stub. */
void bc__driver_set_library(const char *path);

/* Maps a CUresult to a bc_status, recording call/file/line on failure. */
bc_status bc__cu_result(CUresult r, const char *call, const char *file, int line);

#define BC_CU(fn, ...) bc__cu_result(bc__drv->fn(__VA_ARGS__), #fn, __FILE__, __LINE__)

/* The same mapping for calls on unwinding and close/destroy paths, whose
 * failure the caller can neither act on nor be told about: a failure is
 * logged at BC_LOG_WARN but NOT recorded, so bc_last_error() keeps the
 * failure that started the unwinding (and void functions never change it). */
bc_status bc__cu_cleanup_result(CUresult r, const char *call, const char *file, int line);

#define BC_CU_CLEANUP(fn, ...) bc__cu_cleanup_result(bc__drv->fn(__VA_ARGS__), #fn, __FILE__, __LINE__)

/* The cleanup mapping of a result obtained elsewhere (another thread's call). */
#define BC_CU_CLEANUP_RESULT(r, name) bc__cu_cleanup_result((r), (name), __FILE__, __LINE__)

/* 1 if `r` is a result after which the driver refuses all further work in
 * this process (cuda.h: "the process must be terminated and relaunched"). */
int bc__cu_is_sticky(int r);

/* Process-wide loss. Both mappings above record the first sticky result any
 * driver call returns; from then on every barecuda call that would start
 * new work on any device fails fast with BC_ERR_DEVICE_LOST instead of
 * asking the driver (which fails too: the poisoning is process-wide).
 * bc__lost_result: that CUresult, 0 while the process is healthy.
 * bc__lost_fail: records and returns BC_ERR_DEVICE_LOST for `what` (the
 * refused function), naming the call that lost the GPU and its CUresult.
 * bc__lost_reset: test hook only (the fake driver's tests start healthy). */
int bc__lost_result(void);
bc_status bc__lost_fail(const char *what, const char *file, int line);
void bc__lost_reset(void);

#define BC_LOST_FAIL(what) bc__lost_fail((what), __FILE__, __LINE__)

#endif
