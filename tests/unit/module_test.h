/* Shared by the unit tests of modules, kernel plans and mixed graphs: the
 * nvcc fixture's kernels (tests/fixtures/user_kernels.cu) with the
 * parameter signatures the fake driver reports for them, and a device with
 * a stream and buffers. Include after fake_test.h. Run from the repository
 * root (the fixtures are read by relative path). */
#ifndef BC_TESTS_MODULE_TEST_H
#define BC_TESTS_MODULE_TEST_H

#include "fake_test.h"
#include "../fixtures/fixture_params.h"

#define MT_FIX "tests/fixtures/"
#define MT_FATBIN MT_FIX "user_kernels.fatbin"
#define MT_DIGEST_FATBIN 0xaa1322c8a27341faull /* XXH64 of MT_FATBIN (tests/fixtures/README.md) */

/* fixture_saxpy(float a, const float *x, float *y, int n) and
 * fixture_tma_box(CUtensorMap map, float *out, int out_cols, int out_rows),
 * laid out as nvcc lays them out (the map 64-byte aligned). */
static inline void mt_register_signatures(void)
{
    static const size_t saxpy_off[] = {0, 8, 16, 24}, saxpy_size[] = {4, 8, 8, 4};
    static const size_t box_off[] = {0, 128, 136, 140}, box_size[] = {128, 8, 4, 4};
    fake_set_kernel_params("fixture_saxpy", 4, saxpy_off, saxpy_size);
    fake_set_kernel_params("fixture_tma_box", 4, box_off, box_size);
}

typedef struct mt_env {
    bc_device *dev;
    bc_stream *s;
    bc_devptr x, y;
    bc_module *mod;
    bc_kernel *saxpy;
} mt_env;

/* Opens a device (with the embedded kernels if `gemm`), a stream, two
 * 1 MiB buffers (every GEMM planned over them fits: plan creation checks
 * operand extents), and loads the fixture with fixture_saxpy resolved. */
static inline void mt_open(mt_env *e, int gemm)
{
    memset(e, 0, sizeof *e);
    mt_register_signatures();
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = !gemm;
    cfg.device_arena_bytes = 16u << 20;
    assert_ok(bc_device_open(&cfg, &e->dev));
    assert_ok(bc_stream_create(e->dev, 0, &e->s, NULL));
    assert_ok(bc_mem_alloc(e->dev, 1u << 20, &e->x));
    assert_ok(bc_mem_alloc(e->dev, 1u << 20, &e->y));
    assert_ok(bc_module_load_file(e->dev, MT_FATBIN, NULL, &e->mod));
    assert_ok(bc_kernel_get(e->mod, "fixture_saxpy", &e->saxpy));
}

/* A valid saxpy launch over n elements of e's buffers, a = 2.5. */
typedef fixture_saxpy mt_saxpy;

static inline void mt_saxpy_desc(mt_saxpy *v, const mt_env *e, int32_t n)
{
    fixture_saxpy_desc(v, 2.5f, e->x, e->y, n);
}

/* A saxpy plan over n elements (values in *v). */
static inline bc_kernel_plan *mt_saxpy_plan(mt_env *e, mt_saxpy *v, int32_t n)
{
    mt_saxpy_desc(v, e, n);
    bc_kernel_plan *p = NULL;
    assert_ok(bc_kernel_plan_create(e->saxpy, &v->d, &p));
    return p;
}

/* The last failure was `st` and names `call`. */
static inline void mt_assert_failed(bc_status st, const char *call, const char *needle)
{
    bc_error_detail d;
    bc_last_error(&d);
    assert_int_equal(d.status, st);
    if (strcmp(d.call, call) != 0)
        fail_msg("failure names '%s' (%s), expected '%s'", d.call, d.message, call);
    if (needle && strstr(d.message, needle) == NULL)
        fail_msg("message '%s' lacks '%s'", d.message, needle);
}

#endif
