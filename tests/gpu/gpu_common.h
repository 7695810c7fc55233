/* Shared by the GPU test binaries: open the device or skip. Without a driver
 * or a device every test reports SKIPPED, never passed. */
#ifndef BC_TESTS_GPU_COMMON_H
#define BC_TESTS_GPU_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "barecuda.h"

typedef struct gpu_env {
    bc_device *dev;
    bc_stream *s;
    bc_status open_status;
} gpu_env;

/* BC_TEST_FILTER / BC_TEST_SKIP: cmocka glob patterns of the tests to run /
 * to leave out (the device scripts narrow a sanitizer run with them). Call
 * first thing in main. */
static inline void gpu_test_filters(void)
{
    const char *run = getenv("BC_TEST_FILTER"), *skip_ = getenv("BC_TEST_SKIP");
    if (run && *run)
        cmocka_set_test_filter(run);
    if (skip_ && *skip_)
        cmocka_set_skip_filter(skip_);
}

/* Opens device 0 with a large arena; records why it could not. */
static inline int gpu_env_setup(void **state, size_t arena_bytes)
{
    static gpu_env env;
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    cfg.device_arena_bytes = arena_bytes;
    cfg.host_arena_bytes = 64u << 20;
    cfg.kernel_groups = BC_KERNELS_ALL; /* the tests name every configuration and run the executor */
    env.open_status = bc_device_open(&cfg, &env.dev);
    if (env.open_status == BC_OK && bc_stream_create(env.dev, 0, &env.s, NULL) != BC_OK)
        env.open_status = BC_ERR_DRIVER;
    if (env.open_status != BC_OK) {
        bc_error_detail d;
        bc_last_error(&d);
        fprintf(stderr, "gpu tests: no usable GPU (%s: %s): tests will be SKIPPED\n",
                bc_status_string(env.open_status), d.message);
    }
    *state = &env;
    return 0;
}

static inline int gpu_env_teardown(void **state)
{
    gpu_env *env = *state;
    bc_device_close(env->dev);
    env->dev = NULL;
    return 0;
}

/* Skips the calling test unless the device opened. */
#define GPU_ENV_OR_SKIP(state)                                                                    \
    ({                                                                                            \
        gpu_env *e_ = *(state);                                                                   \
        if (e_->open_status != BC_OK)                                                             \
            skip();                                                                               \
        e_;                                                                                       \
    })

/* 1 on a Hopper device (the sm_90a configurations: named ones, split-K). */
static inline int gpu_is_hopper(const gpu_env *env)
{
    bc_device_info info;
    return bc_device_query(env->dev, &info) == BC_OK && info.cc_major == 9 && info.cc_minor == 0;
}

#define CHECK_BC(expr)                                                                            \
    do {                                                                                          \
        bc_status st_ = (expr);                                                                   \
        if (st_ != BC_OK) {                                                                       \
            bc_error_detail d_;                                                                   \
            bc_last_error(&d_);                                                                   \
            fail_msg("%s -> %s (%s)", #expr, bc_status_string(st_), d_.message);                 \
        }                                                                                         \
    } while (0)

#endif
