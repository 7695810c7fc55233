/* The fake-driver environment of the GEMM plan tests (test_gemm_plan.c,
 * test_gemm_rule.c): a device with operand blocks, plan creation that must
 * fail, and the decoded launch and tensor maps of a plan. */
#ifndef BC_TESTS_GEMM_PLAN_ENV_H
#define BC_TESTS_GEMM_PLAN_ENV_H

#include <string.h>

#include "fake_test.h"
#include "gemm_abi.h"
#include "gemm_internal.h"

typedef struct env {
    bc_device *dev;
    bc_stream *s;
    bc_devptr a, b, c, d, bias;
} env;

/* bc_device_config.kernel_groups of the next env_open (0: none) */
static uint32_t env_groups;

static inline void env_open(env *e, int with_kernels)
{
    memset(e, 0, sizeof *e);
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = !with_kernels;
    cfg.kernel_groups = env_groups;
    /* every operand block holds the largest shape used here (8192 x 8192,
     * f32 D): plan creation checks each extent against its block (the fake's
     * memory is host memory that is never touched here) */
    cfg.device_arena_bytes = 1100u << 20;
    assert_ok(bc_device_open(&cfg, &e->dev));
    assert_ok(bc_stream_create(e->dev, 0, &e->s, NULL));
    assert_ok(bc_mem_alloc(e->dev, 256u << 20, &e->a));
    assert_ok(bc_mem_alloc(e->dev, 256u << 20, &e->b));
    assert_ok(bc_mem_alloc(e->dev, 256u << 20, &e->c));
    assert_ok(bc_mem_alloc(e->dev, 256u << 20, &e->d));
    assert_ok(bc_mem_alloc(e->dev, 64u << 10, &e->bias));
    fake_set_param_size(sizeof(bc_gemm_params));
}

static inline void env_close(env *e) { bc_device_close(e->dev); }

static inline bc_gemm_desc base_desc(const env *e, int64_t m, int64_t n, int64_t k)
{
    bc_gemm_desc d;
    bc_gemm_desc_default(&d);
    d.m = m, d.n = n, d.k = k;
    d.a = e->a, d.b = e->b, d.d = e->d;
    return d;
}

/* Plan creation fails with `want`, the failure names `field`, nothing is
 * created and *out is untouched. */
static inline void expect_reject(env *e, const bc_gemm_desc *d, bc_status want, const char *field)
{
    bc_gemm_plan *plan = (bc_gemm_plan *)(uintptr_t)0x1234;
    int live = fake_live_objects();
    assert_status(bc_gemm_plan_create(e->dev, d, &plan), want);
    assert_ptr_equal(plan, (bc_gemm_plan *)(uintptr_t)0x1234);
    assert_int_equal(fake_live_objects(), live);
    bc_error_detail det;
    bc_last_error(&det);
    assert_int_equal(det.status, want);
    if (strcmp(det.call, field) != 0)
        fail_msg("rejected for '%s' (%s), expected field '%s'", det.call, det.message, field);
}

/* Little-endian u64 word i of a fake-encoded tensor map (see fake_driver.h). */
static inline uint64_t word(const uint64_t *map, int i) { return map[i]; }

static inline void check_map_sw(const uint64_t *map, uint64_t addr, uint64_t cols, uint64_t rows, uint64_t row_bytes,
                         unsigned box_cols, unsigned box_rows, CUtensorMapDataType dt, CUtensorMapSwizzle sw)
{
    assert_int_equal(word(map, 1), FAKE_TMAP_MAGIC);
    assert_int_equal(word(map, 0), addr);
    uint64_t meta = word(map, 2);
    assert_int_equal(meta & 0xff, dt);
    assert_int_equal((meta >> 8) & 0xff, 2);                            /* rank */
    assert_int_equal((meta >> 16) & 0xff, CU_TENSOR_MAP_INTERLEAVE_NONE);
    assert_int_equal((meta >> 24) & 0xff, sw);
    assert_int_equal((meta >> 40) & 0xff, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE); /* zero fill */
    assert_int_equal(word(map, 3), cols);
    assert_int_equal(word(map, 4), rows);
    assert_int_equal(word(map, 8), row_bytes);
    assert_int_equal(word(map, 12) & 0xffff, box_cols);
    assert_int_equal((word(map, 12) >> 16) & 0xffff, box_rows);
}

/* A and B maps: always 128-byte swizzled. */
static inline void check_map(const uint64_t *map, uint64_t addr, uint64_t cols, uint64_t rows, uint64_t row_bytes,
                      unsigned box_cols, unsigned box_rows, CUtensorMapDataType dt)
{
    check_map_sw(map, addr, cols, rows, row_bytes, box_cols, box_rows, dt, CU_TENSOR_MAP_SWIZZLE_128B);
}


/* The value of launch attribute `id` in the recorded launch, -1 if absent. */
static inline int attr_value(const fake_launch *l, CUlaunchAttributeID id)
{
    for (unsigned i = 0; i < l->num_attrs; i++)
        if (l->attrs[i].id == id)
            return id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION ? (int)l->attrs[i].value.clusterDim.x
                                                               : l->attrs[i].value.programmaticStreamSerializationAllowed;
    return -1;
}

/* Launches `d` and returns the parameter block the kernel would receive. */
static inline bc_gemm_params launch_and_decode(env *e, const bc_gemm_desc *d, const fake_launch **out_launch)
{
    bc_gemm_plan *plan = NULL;
    assert_ok(bc_gemm_plan_create(e->dev, d, &plan));
    assert_ok(bc_gemm_launch(plan, e->s));
    const fake_launch *l = fake_last_launch();
    assert_non_null(l);
    assert_int_equal(l->param_bytes, sizeof(bc_gemm_params));
    assert_ptr_equal(l->stream, bc_stream_handle(e->s));
    bc_gemm_params p;
    memcpy(&p, l->params, sizeof p);
    bc_gemm_plan_destroy(plan);
    *out_launch = l;
    return p;
}

/* Launches `d` and checks that it ran `kernel`. */
static inline void expect_kernel(env *e, const bc_gemm_desc *d, const char *kernel)
{
    const fake_launch *l = NULL;
    launch_and_decode(e, d, &l);
    assert_string_equal(l->kernel, kernel);
}

/* The plan info of `d` (created, queried, destroyed). */
static inline bc_gemm_plan_info plan_info(env *e, const bc_gemm_desc *d)
{
    bc_gemm_plan *plan = NULL;
    assert_ok(bc_gemm_plan_create(e->dev, d, &plan));
    bc_gemm_plan_info info;
    assert_ok(bc_gemm_plan_query(plan, &info));
    bc_gemm_plan_destroy(plan);
    return info;
}

#endif
