/* The resident executor on the fake driver: validation (each rule its
 * status, nothing created or leaked on failure), the program (barriers only
 * between dependent operations, tile lists, the default grid), the launch
 * (cooperative, the kernel of the plans' configuration), the step path (no
 * driver call, no allocation), timeouts that recover, stop and restart,
 * close with the kernel running or hung. The fake runs the kernel as a
 * thread (fake_resident.c) and the GEMM emulator computes each step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fake_test.h"
#include "gemm_emu.h"
#include "resident_internal.h"

#include "heap_count.h"

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

static void env_open(env *e)
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

static bc_gemm_desc layer_desc(const env *e, int l, const char *config)
{
    bc_gemm_desc d;
    bc_gemm_desc_default(&d);
    d.m = BATCH, d.n = width[l + 1], d.k = width[l];
    d.a = e->act[l], d.b = e->w[l], d.d = e->act[l + 1], d.bias = e->bias[l];
    d.relu = l + 1 < LAYERS;
    d.config = config;
    return d;
}

static void make_plans(env *e)
{
    for (int l = 0; l < LAYERS; l++) {
        bc_gemm_desc d = layer_desc(e, l, "sm90_64x32");
        assert_ok(bc_gemm_plan_create(e->dev, &d, &e->plan[l]));
    }
}

static const bc_gemm_plan *const *plans_of(const env *e) { return (const bc_gemm_plan *const *)e->plan; }

/* The copies of the zero-copy mode: the input into act[0], act[3] out. */
static bc_resident_config io_config(const env *e, bc_resident_copy *in, bc_resident_copy *out)
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
static bc_resident *started_mlp(env *e)
{
    env_open(e);
    make_plans(e);
    bc_resident *res = NULL;
    assert_ok(bc_resident_create(e->dev, plans_of(e), LAYERS, NULL, &res));
    assert_ok(bc_resident_start(res, e->s));
    return res;
}

static void test_config_default(void **state)
{
    bc_resident_config c;
    memset(&c, 0xAB, sizeof c);
    assert_ok(bc_resident_config_default(&c));
    assert_int_equal(c.sm_count, 0);
    assert_int_equal(c.spin_ns, 1000000);
    assert_int_equal(c.max_sleep_ns, 20000);
    assert_null(c.inputs);
    assert_int_equal(c.input_count + c.output_count, 0);
    assert_status(bc_resident_config_default(NULL), BC_ERR_INVALID_ARGUMENT);
}

/* Creation fails with `want` naming `field`; nothing is created or leaked. */
static void expect_reject(env *e, const bc_gemm_plan *const *plans, int count, const bc_resident_config *cfg,
                          bc_status want, const char *field)
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

/* The resident kernels are an optional group: without BC_KERNELS_RESIDENT
 * at open, creation fails and names the flag. */
static void test_needs_its_group(void **state)
{
    (void)state;
    open_groups = BC_KERNELS_PORTABLE;
    env e;
    env_open(&e);
    open_groups = BC_KERNELS_ALL;
    make_plans(&e);
    expect_reject(&e, plans_of(&e), LAYERS, NULL, BC_ERR_NO_KERNEL_FOR_DEVICE, "config");
    bc_error_detail det;
    bc_last_error(&det);
    assert_non_null(strstr(det.message, "BC_KERNELS_RESIDENT"));
    bc_device_close(e.dev); /* the plans go with it */
    assert_int_equal(fake_live_objects(), 0);
}

static void test_create_rejects(void **state)
{
    env e;
    env_open(&e);
    make_plans(&e);
    bc_resident *res = NULL;
    assert_status(bc_resident_create(NULL, plans_of(&e), 1, NULL, &res), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_resident_create(e.dev, plans_of(&e), 1, NULL, NULL), BC_ERR_INVALID_ARGUMENT);
    expect_reject(&e, plans_of(&e), 0, NULL, BC_ERR_INVALID_ARGUMENT, "count");
    expect_reject(&e, NULL, 1, NULL, BC_ERR_INVALID_ARGUMENT, "count");
    const bc_gemm_plan *seventeen[17];
    for (int i = 0; i < 17; i++)
        seventeen[i] = e.plan[0];
    expect_reject(&e, seventeen, 17, NULL, BC_ERR_INVALID_ARGUMENT, "count");
    const bc_gemm_plan *with_null[2] = {e.plan[0], NULL};
    expect_reject(&e, with_null, 2, NULL, BC_ERR_INVALID_ARGUMENT, "plans");

    /* another configuration, a split-K plan, the configuration without a resident kernel */
    bc_gemm_plan *other = NULL, *split = NULL, *big = NULL;
    bc_gemm_desc d = layer_desc(&e, 1, "sm90_128x64");
    assert_ok(bc_gemm_plan_create(e.dev, &d, &other));
    const bc_gemm_plan *mixed[2] = {e.plan[0], other};
    expect_reject(&e, mixed, 2, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    d = layer_desc(&e, 1, "sm90_128x128s");
    d.split_k = 2;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &split));
    expect_reject(&e, (const bc_gemm_plan *const *)&split, 1, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    d = layer_desc(&e, 1, "sm90_128x256");
    assert_ok(bc_gemm_plan_create(e.dev, &d, &big));
    expect_reject(&e, (const bc_gemm_plan *const *)&big, 1, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    /* a stream-K plan (its 32 tiles of 64x32 down K = 8192 over 64 CTAs): its bits are not the whole tiles' */
    bc_gemm_plan *sk = NULL;
    bc_devptr ka = 0, kb = 0;
    assert_ok(bc_mem_alloc(e.dev, (size_t)BATCH * 8192 * 2, &ka));
    assert_ok(bc_mem_alloc(e.dev, (size_t)1024 * 8192 * 2, &kb));
    bc_gemm_desc skd = layer_desc(&e, 1, "sm90_64x32");
    skd.k = 8192, skd.n = 1024, skd.a = ka, skd.b = kb, skd.stream_k = 1;
    assert_ok(bc_gemm_plan_create(e.dev, &skd, &sk));
    bc_gemm_plan_info ski;
    assert_ok(bc_gemm_plan_query(sk, &ski));
    assert_true(ski.stream_k_tiles > 0);
    expect_reject(&e, (const bc_gemm_plan *const *)&sk, 1, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    bc_gemm_plan_destroy(sk);
    assert_ok(bc_mem_free(e.dev, kb));
    assert_ok(bc_mem_free(e.dev, ka));
    /* the narrow split twin runs in 64x32's kernel, beside whole 64x32 plans; not beside a skinny one */
    bc_gemm_plan *narrow = NULL, *skinny = NULL;
    d = layer_desc(&e, 1, "sm90_64x32s");
    d.split_k = 4;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &narrow));
    const bc_gemm_plan *with_narrow[2] = {e.plan[0], narrow};
    bc_resident *r = NULL;
    assert_ok(bc_resident_create(e.dev, with_narrow, 2, NULL, &r));
    bc_resident_info ri;
    assert_ok(bc_resident_query(r, &ri));
    assert_true(ri.partial_bytes >= 64u * 32u * 4u * 4u); /* its 4 partials of a 64 x 32 f32 tile, at least */
    bc_resident_destroy(r);
    d = layer_desc(&e, 1, "sm90_64x32m16");
    assert_ok(bc_gemm_plan_create(e.dev, &d, &skinny));
    const bc_gemm_plan *narrow_skinny[2] = {narrow, skinny};
    expect_reject(&e, narrow_skinny, 2, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    /* the narrow short-K twin too: beside whole 64x32 plans, not beside a skinny one */
    bc_gemm_plan *twin = NULL;
    d = layer_desc(&e, 1, "sm90_64x32t");
    assert_ok(bc_gemm_plan_create(e.dev, &d, &twin));
    const bc_gemm_plan *with_twin[2] = {e.plan[0], twin};
    assert_ok(bc_resident_create(e.dev, with_twin, 2, NULL, &r));
    assert_ok(bc_resident_query(r, &ri));
    assert_string_equal(ri.config, "sm90_64x32");
    bc_resident_destroy(r);
    const bc_gemm_plan *twin_skinny[2] = {twin, skinny};
    expect_reject(&e, twin_skinny, 2, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    bc_gemm_plan_destroy(twin);
    bc_gemm_plan_destroy(skinny);
    bc_gemm_plan_destroy(narrow);
    /* a value head of one column after the 1024-wide layer: the rule's dot kernel has no resident kernel (the
     * refusal says what to pin); pinned to the network's configuration it runs beside its layers */
    bc_gemm_plan *head = NULL;
    d = layer_desc(&e, 2, NULL);
    d.n = 1, d.bias = 0, d.relu = 0;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &head));
    bc_gemm_plan_info hi;
    assert_ok(bc_gemm_plan_query(head, &hi));
    assert_string_equal(hi.config, "sm90_dot");
    const bc_gemm_plan *with_head[2] = {e.plan[0], head};
    expect_reject(&e, with_head, 2, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    bc_error_detail det;
    bc_last_error(&det);
    assert_non_null(strstr(det.message, "pin bc_gemm_desc.config"));
    bc_gemm_plan_destroy(head);
    d.config = "sm90_64x32";
    assert_ok(bc_gemm_plan_create(e.dev, &d, &head));
    with_head[1] = head;
    assert_ok(bc_resident_create(e.dev, with_head, 2, NULL, &r));
    bc_resident_destroy(r);
    bc_gemm_plan_destroy(head);

    /* a plan of another device object */
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    cfg.kernel_groups = BC_KERNELS_ALL;
    cfg.device_arena_bytes = 8u << 20;
    bc_device *dev2 = NULL;
    bc_gemm_plan *foreign = NULL;
    assert_ok(bc_device_open(&cfg, &dev2));
    bc_devptr p2 = 0;
    assert_ok(bc_mem_alloc(dev2, 1u << 20, &p2));
    bc_gemm_desc d2 = layer_desc(&e, 0, "sm90_64x32");
    d2.a = d2.b = p2, d2.d = p2 + (512u << 10), d2.bias = 0; /* A and B only read: they may share */
    assert_ok(bc_gemm_plan_create(dev2, &d2, &foreign));
    expect_reject(&e, (const bc_gemm_plan *const *)&foreign, 1, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    bc_device_close(dev2);
    assert_ok(bc_device_bind_thread(e.dev));

    /* copies: alignment and size, a host side outside the pinned pool, NULL arrays */
    bc_resident_copy in, out;
    bc_resident_config c = io_config(&e, &in, &out);
    in.bytes = 24;
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_MISALIGNED, "inputs");
    in = (bc_resident_copy){(char *)e.host_in + 8, e.act[0], 16};
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_MISALIGNED, "inputs");
    static _Alignas(16) unsigned char not_pinned[64];
    in = (bc_resident_copy){not_pinned, e.act[0], 64};
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_WRONG_DEVICE, "inputs");
    c = io_config(&e, &in, &out);
    out.dev = 0;
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_MISALIGNED, "outputs");
    c.outputs = NULL;
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_INVALID_ARGUMENT, "cfg");

    /* the grid: more CTAs than SMs; the device cannot keep them resident; no cooperative launch */
    bc_resident_config_default(&c);
    c.sm_count = 133;
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_INVALID_ARGUMENT, "sm_count");
    c.max_sleep_ns = 2000000;
    c.sm_count = 0;
    expect_reject(&e, plans_of(&e), LAYERS, &c, BC_ERR_INVALID_ARGUMENT, "max_sleep_ns");
    fake_set_kernel_attr("bc_resident_sm90_64x32", CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 128);
    bc_device_close(e.dev);
    env_open(&e);
    make_plans(&e);
    expect_reject(&e, plans_of(&e), LAYERS, NULL, BC_ERR_LAUNCH_CONFIG, "sm_count");
    fake_set_device_attr(0, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 0);
    expect_reject(&e, plans_of(&e), LAYERS, NULL, BC_ERR_NOT_SUPPORTED, "cooperative launch");
    bc_device_close(e.dev);
}

/* The program the kernel receives, read from the fake's device memory. */
static const bc_resident_op *program_of(const fake_launch *l, bc_resident_params *out)
{
    memcpy(out, l->params, sizeof *out);
    return (const bc_resident_op *)(uintptr_t)out->program;
}

/* q[0], then an N = 1 plan made from *d that runs transposed: a barrier
 * between them, B loaded before it or not (prefetch), one step run. */
static void head_after(env *e, bc_gemm_plan **q, const bc_gemm_desc *d, int prefetch)
{
    assert_ok(bc_gemm_plan_create(e->dev, d, &q[1]));
    bc_gemm_plan_info qi;
    assert_ok(bc_gemm_plan_query(q[1], &qi));
    assert_int_equal(qi.swapped, 1);
    bc_resident *res = NULL;
    assert_ok(bc_resident_create(e->dev, (const bc_gemm_plan *const *)q, 2, NULL, &res));
    assert_ok(bc_resident_start(res, e->s));
    bc_resident_params p;
    const bc_resident_op *ops = program_of(fake_last_launch(), &p);
    assert_int_equal(ops[1].x.barrier, 1);
    assert_int_equal(ops[1].x.prefetch_b, prefetch);
    assert_ok(bc_resident_step(res, 5 * SEC));
    bc_resident_destroy(res);
    bc_gemm_plan_destroy(q[1]);
}

static void test_program(void **state)
{
    env e;
    env_open(&e);
    make_plans(&e);
    /* a chain: a barrier before each dependent layer; the default grid is the widest phase's tiles */
    bc_resident *res = NULL;
    assert_ok(bc_resident_create(e.dev, plans_of(&e), LAYERS, NULL, &res));
    bc_resident_info in;
    assert_ok(bc_resident_query(res, &in));
    assert_string_equal(in.config, "sm90_64x32");
    assert_int_equal(in.plans, 3);
    assert_int_equal(in.operations, 3);
    assert_int_equal(in.barriers, 2);
    assert_int_equal(in.sm_count, 32); /* 1024 / 32 column tiles */
    assert_int_equal(in.running, 0);
    assert_ok(bc_resident_start(res, e.s));
    const fake_launch *l = fake_last_launch();
    assert_string_equal(l->kernel, "bc_resident_sm90_64x32");
    assert_int_equal(l->grid[0], 32);
    assert_int_equal(l->block[0], BC_SM90_THREADS(1));
    assert_int_equal(l->smem, BC_RESIDENT_SMEM_OF(BC_SM90_CFG_64X32));
    int coop = 0;
    for (unsigned i = 0; i < l->num_attrs; i++)
        coop |= l->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && l->attrs[i].value.cooperative;
    assert_true(coop);
    bc_resident_params p;
    const bc_resident_op *ops = program_of(l, &p);
    assert_int_equal(p.ops, 3);
    assert_int_equal(p.sync, p.program + 3 * sizeof(bc_resident_op));
    assert_int_equal(p.spin_ns, 1000000);
    assert_int_equal(p.sys_release, 0);
    for (int j = 0; j < LAYERS; j++) {
        const bc_gemm_params *gp = &e.plan[j]->params;
        assert_memory_equal(ops[j].tmap_a, gp->tmap_a, sizeof gp->tmap_a);
        assert_memory_equal(ops[j].tmap_b, gp->tmap_b, sizeof gp->tmap_b);
        assert_memory_equal(ops[j].tmap_d, gp->tmap_d, sizeof gp->tmap_d);
        assert_int_equal(ops[j].x.kind, BC_RESIDENT_OP_GEMM);
        assert_int_equal(ops[j].x.barrier, j > 0);
        assert_int_equal(ops[j].x.prefetch_b, j > 0); /* the weights: no layer writes them */
        assert_int_equal(ops[j].x.tile0, 0);
        assert_int_equal(ops[j].x.phase_tiles, gp->tiles_m * gp->tiles_n);
        assert_int_equal(ops[j].x.flags, gp->flags);
        assert_int_equal(ops[j].x.d, gp->d);
        assert_int_equal(ops[j].x.bias, gp->bias);
        assert_int_equal(ops[j].x.k_blocks, gp->k_blocks);
    }
    assert_ok(bc_resident_stop(res, SEC));
    bc_resident_destroy(res);

    /* independent plans share a phase: concatenated tiles, no barrier */
    bc_gemm_plan *ind[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        bc_gemm_desc d = layer_desc(&e, 1, "sm90_64x32");
        d.a = e.act[1 + i], d.d = e.act[i ? 0 : 3]; /* 0: act1 -> act3, 1: act2 -> act0 */
        d.n = 64, d.bias = 0;
        d.k = 256;
        assert_ok(bc_gemm_plan_create(e.dev, &d, &ind[i]));
    }
    assert_ok(bc_resident_create(e.dev, (const bc_gemm_plan *const *)ind, 2, NULL, &res));
    assert_ok(bc_resident_query(res, &in));
    assert_int_equal(in.barriers, 0);
    assert_int_equal(in.sm_count, 4); /* two plans of two tiles */
    assert_ok(bc_resident_start(res, e.s));
    ops = program_of(fake_last_launch(), &p);
    assert_int_equal(ops[1].x.barrier, 0);
    assert_int_equal(ops[1].x.tile0, 2);
    assert_int_equal(ops[0].x.phase_tiles, 4);
    assert_int_equal(ops[1].x.phase_tiles, 4);
    bc_resident_destroy(res); /* stops it */

    /* a later plan that writes what an earlier one reads needs a barrier too */
    bc_gemm_desc d = layer_desc(&e, 1, "sm90_64x32");
    d.a = e.act[2], d.d = e.act[1]; /* writes ind[0]'s A */
    d.n = 64, d.bias = 0, d.k = 256;
    bc_gemm_plan *war = NULL;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &war));
    const bc_gemm_plan *pair[2] = {ind[0], war};
    assert_ok(bc_resident_create(e.dev, pair, 2, NULL, &res));
    assert_ok(bc_resident_query(res, &in));
    assert_int_equal(in.barriers, 1);
    bc_resident_destroy(res);

    /* a plan whose B is the previous plan's D: a barrier, and B is not loaded before it */
    bc_gemm_plan *q[2] = {NULL, NULL};
    d = layer_desc(&e, 0, "sm90_64x32"); /* 16 x 64 x 256 into act[1] */
    d.n = 64, d.bias = 0, d.relu = 0;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &q[0]));
    d = layer_desc(&e, 0, "sm90_64x32"); /* 16 x 16 x 64, B = act[1] as 16 rows of 64 */
    d.a = e.act[2], d.b = e.act[1], d.d = e.act[3];
    d.n = 16, d.k = 64, d.bias = 0, d.relu = 0;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &q[1]));
    assert_ok(bc_resident_create(e.dev, (const bc_gemm_plan *const *)q, 2, NULL, &res));
    assert_ok(bc_resident_start(res, e.s));
    ops = program_of(fake_last_launch(), &p);
    assert_int_equal(ops[1].x.barrier, 1);
    assert_int_equal(ops[1].x.prefetch_b, 0);
    assert_ok(bc_resident_step(res, 5 * SEC)); /* the emulator computes it */
    bc_resident_destroy(res);
    bc_gemm_plan_destroy(q[0]), bc_gemm_plan_destroy(q[1]);

    /* an N = 1 head that runs transposed (its kernel's B is the caller's A, the previous layer's
     * output): a barrier, and that B is not loaded before it; the caller's B (the weights) is */
    d = layer_desc(&e, 0, NULL); /* 16 x 64 x 256 into act[1], the rule's skinny plan */
    d.n = 64, d.bias = 0, d.relu = 0;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &q[0]));
    d = layer_desc(&e, 0, NULL); /* 16 x 1 x 64: A = act[1], B = a weight row, D one column */
    d.a = e.act[1], d.b = e.w[2], d.d = e.act[2];
    d.n = 1, d.k = 64, d.bias = 0, d.relu = 0;
    head_after(&e, q, &d, 0);
    d.a = e.act[0], d.b = e.act[1]; /* the caller's B is what the first layer writes; A (the kernel's B) is not */
    head_after(&e, q, &d, 1);
    bc_gemm_plan_destroy(q[0]);

    /* copies: in, three layers, out: a barrier before every operation but the first */
    bc_resident_copy cin, cout;
    bc_resident_config c = io_config(&e, &cin, &cout);
    c.sm_count = 7;
    assert_ok(bc_resident_create(e.dev, plans_of(&e), LAYERS, &c, &res));
    assert_ok(bc_resident_query(res, &in));
    assert_int_equal(in.operations, 5);
    assert_int_equal(in.barriers, 4);
    assert_int_equal(in.sm_count, 7);
    assert_ok(bc_resident_start(res, e.s));
    ops = program_of(fake_last_launch(), &p);
    assert_int_equal(p.sys_release, 1);
    assert_int_equal(ops[0].x.kind, BC_RESIDENT_OP_COPY);
    assert_int_equal(ops[0].x.d, e.act[0]);
    assert_int_equal(ops[0].x.c, (uint64_t)(uintptr_t)e.host_in);
    assert_int_equal(ops[4].x.kind, BC_RESIDENT_OP_COPY);
    assert_int_equal(ops[4].x.d, (uint64_t)(uintptr_t)e.host_out);
    assert_int_equal(ops[4].x.c, e.act[LAYERS]);
    assert_int_equal(ops[4].x.bias, BATCH * width[LAYERS] * 2);
    assert_int_equal(ops[1].x.prefetch_b, 1); /* the copy in writes the input, not the weights */
    bc_resident_destroy(res);
    bc_device_close(e.dev); /* the plans go with it */
}

/* Layer by layer, the fp64 reference of what the executor left in act[1..3]
 * (each layer from the previous layer's actual output). */
static void check_mlp(env *e, const void *in, const void *out)
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

/* Split-K plans run in their whole-tile twin's kernel: S work items a
 * tile, one arrival counter a tile (zeroed at each start with the sync
 * block), one partial slot an item; other kernels refuse them. */
static void test_split_program(void **state)
{
    env e;
    env_open(&e);
    static const uint32_t split[LAYERS] = {1, 2, 8};
    for (int l = 0; l < LAYERS; l++) {
        bc_gemm_desc d = layer_desc(&e, l, split[l] > 1 ? "sm90_64x32m16s" : "sm90_64x32m16");
        d.split_k = split[l];
        assert_ok(bc_gemm_plan_create(e.dev, &d, &e.plan[l]));
        assert_int_equal(e.plan[l]->params.split_k, split[l]);
    }
    bc_resident *res = NULL;
    assert_ok(bc_resident_create(e.dev, plans_of(&e), LAYERS, NULL, &res));
    bc_resident_info in;
    assert_ok(bc_resident_query(res, &in));
    assert_string_equal(in.config, "sm90_64x32m16");
    const uint64_t slot = 16 * 32 * 4; /* one item's 16 x 32 f32 partial */
    const uint32_t tiles1 = 1024 / 32, tiles2 = 64 / 32;
    assert_int_equal(in.partial_bytes, (tiles1 * 2 + tiles2 * 8) * slot);
    assert_int_equal(in.sm_count, tiles1 * 2); /* the widest phase's work items */
    assert_ok(bc_resident_start(res, e.s));
    const fake_launch *l = fake_last_launch();
    assert_string_equal(l->kernel, "bc_resident_sm90_64x32m16");
    bc_resident_params p;
    const bc_resident_op *ops = program_of(l, &p);
    assert_int_equal(ops[0].x.split, 1);
    assert_int_equal(ops[0].x.phase_tiles, tiles1);
    assert_int_equal(ops[1].x.split, 2);
    assert_int_equal(ops[1].x.phase_tiles, tiles1 * 2);
    assert_int_equal(ops[2].x.split, 8);
    assert_int_equal(ops[2].x.phase_tiles, tiles2 * 8);
    assert_int_equal(ops[1].x.ctr0, 0);
    assert_int_equal(ops[2].x.ctr0, tiles1);
    const uint32_t sync_bytes = BC_RESIDENT_SYNC_CTR + 256; /* 34 counters, rounded up to 256 bytes */
    assert_int_equal(ops[1].x.ws_off, sync_bytes);
    assert_int_equal(ops[2].x.ws_off, sync_bytes + tiles1 * 2 * slot);
    /* the counters are zeroed at every start, and the partials lie inside the allocation */
    assert_ok(bc_resident_stop(res, SEC));
    uint8_t junk[BC_RESIDENT_SYNC_CTR + 256];
    memset(junk, 0xA5, sizeof junk);
    assert_ok(bc_memcpy_htod(e.dev, p.sync, junk, sizeof junk));
    assert_ok(bc_resident_start(res, e.s));
    assert_ok(bc_resident_step(res, 5 * SEC));
    assert_ok(bc_resident_stop(res, SEC));
    uint8_t back[sizeof junk];
    assert_ok(bc_memcpy_dtoh(e.dev, back, p.sync, sizeof back));
    for (size_t i = BC_RESIDENT_SYNC_CTR; i < sizeof back; i++)
        assert_int_equal(back[i], 0);
    const uint64_t end = p.sync + ops[2].x.ws_off + tiles2 * 8 * slot;
    assert_ok(bc_memcpy_htod(e.dev, end - 16, junk, 16)); /* the last slot's last bytes: allocated */
    bc_resident_destroy(res);

    /* the split twin shares a kernel with 64x32m16 only */
    bc_gemm_plan *wide = NULL;
    bc_gemm_desc d = layer_desc(&e, 0, "sm90_64x32");
    assert_ok(bc_gemm_plan_create(e.dev, &d, &wide));
    const bc_gemm_plan *mixed[2] = {wide, e.plan[2]};
    expect_reject(&e, mixed, 2, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    mixed[0] = e.plan[2], mixed[1] = wide;
    expect_reject(&e, mixed, 2, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    bc_gemm_plan_destroy(wide);
    for (int i = 0; i < LAYERS; i++)
        bc_gemm_plan_destroy(e.plan[i]);
    bc_device_close(e.dev);
}

/* Steps through the emulator, with the input and output copied by the
 * kernel from and to pinned memory; numbering continues across a restart. */
static void test_steps_compute(void **state)
{
    env e;
    env_open(&e);
    make_plans(&e);
    bc_resident_copy cin, cout;
    bc_resident_config c = io_config(&e, &cin, &cout);
    bc_resident *res = NULL;
    assert_ok(bc_resident_create(e.dev, plans_of(&e), LAYERS, &c, &res));
    assert_status(bc_resident_ring(res), BC_ERR_INVALID_ARGUMENT); /* not started */
    assert_ok(bc_resident_start(res, e.s));
    assert_status(bc_resident_start(res, e.s), BC_ERR_INVALID_ARGUMENT);
    for (int step = 1; step <= 3; step++) {
        bc_ref_fill_normal(e.host_in, BC_DTYPE_BF16, (size_t)(BATCH * width[0]), 1.0, &e.rng);
        memset(e.host_out, 0xFF, (size_t)(BATCH * width[LAYERS]) * 2);
        assert_ok(bc_resident_step(res, 5 * SEC));
        check_mlp(&e, e.host_in, e.host_out);
    }
    bc_resident_info in;
    assert_ok(bc_resident_query(res, &in));
    assert_int_equal(in.steps_done, 3);
    assert_int_equal(in.running, 1);
    assert_ok(bc_resident_stop(res, SEC));
    assert_ok(bc_resident_stop(res, SEC)); /* not running: nothing to do */
    assert_ok(bc_stream_query(e.s));        /* the kernel has ended */
    assert_ok(bc_resident_start(res, e.s));
    assert_ok(bc_resident_step(res, 5 * SEC));
    assert_ok(bc_resident_query(res, &in));
    assert_int_equal(in.steps_done, 4);
    assert_int_equal(fake_resident_steps(), 4);
    bc_resident_destroy(res);
    assert_int_equal(fake_resident_misuse(), 0);
    bc_device_close(e.dev);
}

/* A step that does not complete: ring refuses a second one, waits time out
 * within their bound, and a later wait sees the step complete. */
static void test_timeout_recovers(void **state)
{
    env e;
    bc_resident *res = started_mlp(&e);
    assert_ok(bc_resident_step(res, 5 * SEC));
    fake_set_resident_stall(1);
    assert_ok(bc_resident_ring(res));
    assert_status(bc_resident_ring(res), BC_ERR_NOT_READY);
    const double t0 = ft_now_ms();
    assert_status(bc_resident_wait(res, 20000000), BC_ERR_TIMEOUT);
    const double took = ft_now_ms() - t0;
    assert_true(took >= 20.0 && took < 500.0);
    assert_status(bc_resident_wait(res, 0), BC_ERR_TIMEOUT);
    assert_status(bc_resident_stop(res, 10000000), BC_ERR_TIMEOUT); /* the step is still in progress */
    fake_set_resident_stall(0);
    assert_ok(bc_resident_wait(res, 5 * SEC));
    bc_resident_info in;
    assert_ok(bc_resident_query(res, &in));
    assert_int_equal(in.steps_done, 2);
    assert_ok(bc_resident_stop(res, SEC));
    bc_resident_destroy(res);
    bc_device_close(e.dev);
}

/* ring and wait: one host store and a poll; no driver call, no allocation. */
static void test_step_path_is_free(void **state)
{
    env e;
    bc_resident *res = started_mlp(&e);
    const uint64_t calls = fake_calls();
    heap_calls = 0;
    counting = 1;
    for (int i = 0; i < 50; i++) {
        bc_status st = bc_resident_step(res, 5 * SEC);
        if (st != BC_OK) {
            counting = 0;
            fail_msg("step %d: %s", i, bc_status_string(st));
        }
    }
    bc_resident_info in;
    bc_status st = bc_resident_query(res, &in);
    counting = 0;
    assert_ok(st);
    assert_int_equal(fake_calls(), calls);
    assert_int_equal(heap_calls, 0);
    assert_int_equal(in.steps_done, 50);
    bc_resident_destroy(res);
    bc_device_close(e.dev);
}

/* Closing the device with the executor running stops it first. */
static void test_close_stops_it(void **state)
{
    env e;
    bc_resident *res = started_mlp(&e);
    assert_ok(bc_resident_step(res, 5 * SEC));
    fake_live_counts c;
    fake_live(&c);
    assert_int_equal(c.residents, 1);
    bc_device_close(e.dev);
    assert_int_equal(fake_resident_misuse(), 0);
    assert_int_equal(fake_live_objects(), 0);
}

/* A kernel that never answers: close gives it the stop bound, then
 * abandons the device (context, module, arenas and the kernel left to the
 * driver: each of those frees would wait for the kernel). */
static void test_close_with_hung_kernel(void **state)
{
    env e;
    assert_non_null(started_mlp(&e)); /* left to bc_device_close */
    fake_set_resident_stall(1);
    const double t0 = ft_now_ms();
    bc_device_close(e.dev);
    const double took = ft_now_ms() - t0;
    assert_true(took >= 1000.0 && took < 3000.0);
    assert_int_equal(fake_resident_misuse(), 0);
    fake_live_counts c;
    fake_live(&c);
    /* abandoned: nothing that would wait for the kernel was called */
    assert_int_equal(c.residents, 1);
    assert_int_equal(c.contexts, 1);
    assert_int_equal(c.modules, 3); /* the image and both optional cubins (opened with every group) */
    assert_int_equal(c.allocations, 1);
    assert_int_equal(c.host_allocations, 1);
    fake_set_resident_stall(0); /* the kernel now sees the stop it was rung */
    fake_reset();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_config_default),   ft_test(test_create_rejects),   ft_test(test_program),
        ft_test(test_steps_compute),    ft_test(test_timeout_recovers), ft_test(test_step_path_is_free),
        ft_test(test_split_program),    ft_test(test_needs_its_group),  ft_test(test_close_stops_it),
        ft_test(test_close_with_hung_kernel),
    };
    return cmocka_run_group_tests_name("resident", tests, NULL, NULL);
}
