/* Shared helpers for the unit tests that run the runtime on the fake driver.
 * Include after <setjmp.h>, <stdarg.h>, <stddef.h>, <stdint.h>, <cmocka.h>. */
#ifndef BC_TESTS_FAKE_TEST_H
#define BC_TESTS_FAKE_TEST_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "barecuda.h"
#include "fake_driver.h"

/* A config every device test can open without the kernel loader: kernels
 * skipped (TODO(loader): the lead enables kernel loading in tests), small
 * arenas. */
static inline bc_device_config ft_config(void)
{
    bc_device_config c;
    bc_device_config_default(&c);
    c.skip_kernel_load = 1;
    c.device_arena_bytes = 1u << 20;
    c.host_arena_bytes = 256u << 10;
    c.max_allocations = 64;
    return c;
}

/* cmocka group/test setup: a clean fake, no log callback. */
static inline int ft_setup(void **state)
{
    (void)state;
    fake_install();
    bc_set_log_callback(NULL, NULL, BC_LOG_WARN);
    return 0;
}

/* Teardown: every test must leave no driver object alive. */
static inline int ft_teardown(void **state)
{
    (void)state;
    if (fake_live_objects() != 0) {
        fprintf(stderr, "leaked fake driver objects: %s\n", fake_live_string());
        return -1;
    }
    return 0;
}

#define ft_test(fn) cmocka_unit_test_setup_teardown(fn, ft_setup, ft_teardown)

#define assert_ok(expr)                                                                          \
    do {                                                                                         \
        bc_status st_ = (expr);                                                                  \
        if (st_ != BC_OK) {                                                                      \
            bc_error_detail d_;                                                                  \
            bc_last_error(&d_);                                                                  \
            fail_msg("%s -> %s [%s] %s", #expr, bc_status_string(st_), d_.call, d_.message);      \
        }                                                                                        \
    } while (0)

#define assert_status(expr, want)                                                                \
    do {                                                                                         \
        bc_status st_ = (expr);                                                                  \
        if (st_ != (want))                                                                       \
            fail_msg("%s -> %s, want %s", #expr, bc_status_string(st_), bc_status_string(want)); \
    } while (0)

/* The calling thread's last failure names `call` and carries `cu`. */
static inline void ft_assert_last(bc_status st, const char *call, int cu)
{
    bc_error_detail d;
    assert_int_equal(bc_last_error(&d), BC_OK);
    assert_int_equal(d.status, st);
    assert_string_equal(d.call, call);
    assert_int_equal(d.cu_result, cu);
    assert_non_null(d.file);
    assert_true(d.message[0] != '\0');
}

static inline double ft_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Redirects fds 1 and 2 into a temporary file until ft_capture_end, which
 * returns how many bytes were written to them meanwhile. */
typedef struct ft_capture {
    int saved_out, saved_err;
    char path[64];
} ft_capture;

static inline void ft_capture_begin(ft_capture *c)
{
    fflush(stdout);
    fflush(stderr);
    snprintf(c->path, sizeof c->path, "/tmp/bc_capture_XXXXXX");
    int fd = mkstemp(c->path);
    assert_true(fd >= 0);
    c->saved_out = dup(1);
    c->saved_err = dup(2);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
}

static inline long ft_capture_end(ft_capture *c)
{
    fflush(stdout);
    fflush(stderr);
    dup2(c->saved_out, 1);
    dup2(c->saved_err, 2);
    close(c->saved_out);
    close(c->saved_err);
    struct stat sb;
    long n = stat(c->path, &sb) == 0 ? (long)sb.st_size : -1;
    unlink(c->path);
    return n;
}

#endif
