/* Internal: failure recording and logging. */
#ifndef BC_RUNTIME_ERROR_H
#define BC_RUNTIME_ERROR_H

#include "barecuda/status.h"

/* Records `st` as the calling thread's last failure (with the CUresult, the
 * call or rule name and the site), sends the formatted message to the log
 * callback at BC_LOG_ERROR, and returns `st`. */
bc_status bc__fail(bc_status st, int cu_result, const char *cu_name, const char *call,
                   const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* Sends a message to the log callback if one is set and `level` passes. */
void bc__log(bc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 1 if a message at `level` would reach a callback (skip formatting otherwise). */
int bc__log_enabled(bc_log_level level);

#define BC_FAIL(st, rule, ...) bc__fail((st), 0, "", (rule), __FILE__, __LINE__, __VA_ARGS__)

/* BC_OK when stream `s` was made on `owner` (the bc_device a plan, graph,
 * event or executor belongs to), else BC_ERR_INVALID_ARGUMENT naming the
 * stream and `whose` ("the plan", ...): the calls that take a stream trust
 * its device, and the driver's answer to a mix-up would be opaque. */
#define BC_STREAM_ON(s, owner, whose)                                                                    \
    ((s)->dev == (owner) ? BC_OK                                                                         \
                         : BC_FAIL(BC_ERR_INVALID_ARGUMENT, "stream",                                    \
                                   "the stream belongs to another device than %s", (whose)))

#endif
