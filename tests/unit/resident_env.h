/* The resident executor's unit tests' shared set-up (test_resident.c,
 * test_resident_create.c, test_resident_end.c): the MLP of the control-loop example on the fake
 * driver, its plans, its zero-copy copies, and the check that a creation
 * fails cleanly. */
#ifndef BC_TESTS_RESIDENT_ENV_H
#define BC_TESTS_RESIDENT_ENV_H

#include <string.h>

#include "fake_test.h"
#include "gemm_emu.h"
#include "resident_internal.h"

#define SEC 1000000000ull

/* The MLP of the control-loop example: 16 x 256 -> 1024 -> 1024 -> 64. */
enum { BATCH = 16, LAYERS = 3 };
static const int64_t width[LAYERS + 1] = {256, 1024, 1024, 64};

typedef struct env {
    bc_device *dev;
    bc_stream *s;
    bc_devptr act[LAYERS + 1], w[LAYERS], bias[LAYERS];
    bc_gemm_plan *plan[LAYERS];
    void *host_in, *host_out; /* pinned */
    bc_rng rng;
} env;

static uint32_t open_groups = BC_KERNELS_ALL; /* env_open's kernel_groups */

static inline void env_open(env *e)
{
    memset(e, 0, sizeof *e);
    gemm_emu_install(-1);
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    cfg.kernel_groups = open_groups;
    cfg.device_arena_bytes = 32u << 20;
    cfg.host_arena_bytes = 1u << 20;
    assert_ok(bc_device_open(&cfg, &e->dev));
    assert_ok(bc_stream_create(e->dev, 0, &e->s, NULL));
    e->rng.s = 42;
    for (int l = 0; l <= LAYERS; l++)
        assert_ok(bc_mem_alloc(e->dev, (size_t)(BATCH * width[l]) * 2, &e->act[l]));
    for (int l = 0; l < LAYERS; l++) {
        const size_t wn = (size_t)(width[l + 1] * width[l]);
        uint16_t *h = malloc(wn * 2);
        bc_ref_fill_normal(h, BC_DTYPE_BF16, wn, 0.05, &e->rng);
        assert_ok(bc_mem_alloc(e->dev, wn * 2, &e->w[l]));
        assert_ok(bc_memcpy_htod(e->dev, e->w[l], h, wn * 2));
        bc_ref_fill_normal(h, BC_DTYPE_BF16, (size_t)width[l + 1], 0.5, &e->rng);
        assert_ok(bc_mem_alloc(e->dev, (size_t)width[l + 1] * 2, &e->bias[l]));
        assert_ok(bc_memcpy_htod(e->dev, e->bias[l], h, (size_t)width[l + 1] * 2));
        free(h);
    }
    assert_ok(bc_host_alloc(e->dev, (size_t)(BATCH * width[0]) * 2, &e->host_in));
    assert_ok(bc_host_alloc(e->dev, (size_t)(BATCH * width[LAYERS]) * 2, &e->host_out));
}

static inline bc_gemm_desc layer_desc(const env *e, int l, const char *config)
{
    bc_gemm_desc d;
    bc_gemm_desc_default(&d);
    d.m = BATCH, d.n = width[l + 1], d.k = width[l];
    d.a = e->act[l], d.b = e->w[l], d.d = e->act[l + 1], d.bias = e->bias[l];
    d.relu = l + 1 < LAYERS;
    d.config = config;
    d.resident = 1; /* the rule's choice among the configurations a resident kernel runs */
    return d;
}

static inline void make_plans(env *e)
{
    for (int l = 0; l < LAYERS; l++) {
        bc_gemm_desc d = layer_desc(e, l, "sm90_64x32");
        assert_ok(bc_gemm_plan_create(e->dev, &d, &e->plan[l]));
    }
}

static inline const bc_gemm_plan *const *plans_of(const env *e) { return (const bc_gemm_plan *const *)e->plan; }

/* Layer by layer, the fp64 reference of what the executor left in act[1..3]
 * (each layer from the previous layer's actual output). */
static inline void check_mlp(env *e, const void *in, const void *out)
{
    void *x = malloc((size_t)(BATCH * 1024) * 2), *y = malloc((size_t)(BATCH * 1024) * 2);
    void *w = malloc((size_t)(1024 * 1024) * 2), *b = malloc(1024 * 2);
    double ref[1024];
    memcpy(x, in, (size_t)(BATCH * width[0]) * 2);
    for (int l = 0; l < LAYERS; l++) {
        bc_gemm_desc d = layer_desc(e, l, NULL);
        d.lda = d.k, d.ldb = d.k, d.ldd = d.n;
        assert_ok(bc_memcpy_dtoh(e->dev, w, e->w[l], (size_t)(d.n * d.k) * 2));
        assert_ok(bc_memcpy_dtoh(e->dev, b, e->bias[l], (size_t)d.n * 2));
        if (l + 1 < LAYERS)
            assert_ok(bc_memcpy_dtoh(e->dev, y, e->act[l + 1], (size_t)(BATCH * d.n) * 2));
        else
            memcpy(y, out, (size_t)(BATCH * d.n) * 2);
        bc_ref_error err;
        memset(&err, 0, sizeof err);
        for (int64_t r = 0; r < BATCH; r++) {
            bc_ref_gemm_row(&d, x, w, NULL, b, r, ref);
            bc_ref_compare_row(&d, y, r, ref, &err);
        }
        assert_int_equal(err.bad + err.nonfinite, 0);
        assert_int_equal(err.checked, BATCH * d.n);
        void *t = x;
        x = y, y = t;
    }
    free(x), free(y), free(w), free(b);
}

/* The copies of the zero-copy mode: the input into act[0], act[3] out. */
static inline bc_resident_config io_config(const env *e, bc_resident_copy *in, bc_resident_copy *out)
{
    bc_resident_config c;
    bc_resident_config_default(&c);
    *in = (bc_resident_copy){e->host_in, e->act[0], (size_t)(BATCH * width[0]) * 2};
    *out = (bc_resident_copy){e->host_out, e->act[LAYERS], (size_t)(BATCH * width[LAYERS]) * 2};
    c.inputs = in, c.input_count = 1;
    c.outputs = out, c.output_count = 1;
    return c;
}

/* The MLP's plans in an executor with the defaults, started. */
static inline bc_resident *started_mlp(env *e)
{
    env_open(e);
    make_plans(e);
    bc_resident *res = NULL;
    assert_ok(bc_resident_create(e->dev, plans_of(e), LAYERS, NULL, &res));
    assert_ok(bc_resident_start(res, e->s));
    return res;
}

/* An MLP executor that completed one step and has a second rung that the
 * stalled kernel does not run. */
static inline bc_resident *pending_step(env *e)
{
    bc_resident *res = started_mlp(e);
    assert_ok(bc_resident_step(res, 5 * SEC));
    fake_set_resident_stall(1);
    assert_ok(bc_resident_ring(res));
    return res;
}

/* The program the kernel receives, read from the fake's device memory. */
static inline const bc_resident_op *program_of(const fake_launch *l, bc_resident_params *out)
{
    memcpy(out, l->params, sizeof *out);
    return (const bc_resident_op *)(uintptr_t)out->program;
}

/* Creation fails with `want` naming `field`; nothing is created or leaked. */
static inline void expect_reject(env *e, const bc_gemm_plan *const *plans, int count,
                                 const bc_resident_config *cfg, bc_status want, const char *field)
{
    bc_resident *res = (bc_resident *)(uintptr_t)0x1234;
    bc_pool_stats dev0, host0, dev1, host1;
    assert_ok(bc_pool_get_stats(e->dev, BC_POOL_DEVICE, &dev0));
    assert_ok(bc_pool_get_stats(e->dev, BC_POOL_HOST, &host0));
    const int live = fake_live_objects();
    assert_status(bc_resident_create(e->dev, plans, count, cfg, &res), want);
    assert_ptr_equal(res, (bc_resident *)(uintptr_t)0x1234);
    assert_int_equal(fake_live_objects(), live);
    assert_ok(bc_pool_get_stats(e->dev, BC_POOL_DEVICE, &dev1));
    assert_ok(bc_pool_get_stats(e->dev, BC_POOL_HOST, &host1));
    assert_int_equal(dev1.bytes_in_use, dev0.bytes_in_use);
    assert_int_equal(host1.bytes_in_use, host0.bytes_in_use);
    bc_error_detail det;
    bc_last_error(&det);
    assert_int_equal(det.status, want);
    if (strcmp(det.call, field) != 0)
        fail_msg("rejected for '%s' (%s), expected '%s'", det.call, det.message, field);
}

#endif
