/* The resident executor on the fake driver (its creation's validation:
 * test_resident_create.c; its ending by close, abandonment or a lost GPU:
 * test_resident_end.c): the program (barriers only
 * between dependent operations, tile lists, the default grid), the launch
 * (cooperative, the kernel of the plans' configuration, one executor a
 * created stream), the step path (no driver call, no allocation), timeouts
 * that recover, stop and restart. The fake runs the kernel as a
 * thread (fake_resident.c) and the GEMM emulator computes each step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>

#include <cmocka.h>

#include "resident_env.h"

#include "heap_count.h"


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
    d = layer_desc(&e, 0, "sm90_64x32m16"); /* 16 x 64 x 256 into act[1], a skinny layer */
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

/* A plan that runs a multicast twin, the shared operands' maps in half
 * boxes, and the resident kernel of its configuration, which reads whole
 * boxes: the program holds those maps re-encoded at the same addresses
 * (boxes of a_whole and b_whole rows), and the others as the plan has them. */
typedef struct twin_plan {
    int64_t m, n, k;
    const char *config, *kernel, *resident;
    uint32_t multicast, a_box, b_box, a_whole, b_whole;
} twin_plan;

static void check_twin_resident(const twin_plan *t)
{
    env e;
    env_open(&e);
    fake_set_max_active_clusters(30); /* clusters of four the H100 holds at once */
    bc_devptr a = 0, b = 0, d = 0;
    assert_ok(bc_mem_alloc(e.dev, (size_t)(t->m * t->k * 2), &a));
    assert_ok(bc_mem_alloc(e.dev, (size_t)(t->n * t->k * 2), &b));
    assert_ok(bc_mem_alloc(e.dev, (size_t)(t->m * t->n * 2), &d));
    bc_gemm_desc gd;
    bc_gemm_desc_default(&gd);
    gd.m = t->m, gd.n = t->n, gd.k = t->k;
    gd.a = a, gd.b = b, gd.d = d;
    gd.config = t->config;
    bc_gemm_plan *pl = NULL;
    assert_ok(bc_gemm_plan_create(e.dev, &gd, &pl));
    bc_gemm_plan_info info;
    assert_ok(bc_gemm_plan_query(pl, &info));
    assert_int_equal(info.multicast, t->multicast);
    assert_string_equal(info.kernel, t->kernel);
    assert_int_equal((pl->params.tmap_a[12] >> 16) & 0xffff, t->a_box);
    assert_int_equal((pl->params.tmap_b[12] >> 16) & 0xffff, t->b_box);
    bc_resident *res = NULL;
    const bc_gemm_plan *plans[1] = {pl};
    assert_ok(bc_resident_create(e.dev, plans, 1, NULL, &res));
    assert_ok(bc_resident_start(res, e.s));
    const fake_launch *l = fake_last_launch();
    assert_string_equal(l->kernel, t->resident);
    bc_resident_params p;
    const bc_resident_op *ops = program_of(l, &p);
    assert_int_equal((ops[0].tmap_a[12] >> 16) & 0xffff, t->a_whole);
    assert_int_equal((ops[0].tmap_b[12] >> 16) & 0xffff, t->b_whole);
    assert_int_equal(ops[0].tmap_a[0], pl->params.tmap_a[0]); /* the same base addresses */
    assert_int_equal(ops[0].tmap_b[0], pl->params.tmap_b[0]);
    if (!(t->multicast & 2u)) /* A not shared: the plan's own map */
        assert_memory_equal(ops[0].tmap_a, pl->params.tmap_a, sizeof ops[0].tmap_a);
    assert_memory_equal(ops[0].tmap_d, pl->params.tmap_d, sizeof ops[0].tmap_d);
    assert_ok(bc_resident_stop(res, SEC)); /* no step: the emulator's GMACs would be the test's time */
    bc_resident_destroy(res);
    bc_gemm_plan_destroy(pl);
    bc_device_close(e.dev);
}

/* 128x128's pair twin (rows off the 32-byte sectors, 9 x 10 tiles: 50
 * pairs; B in boxes of 64 rows) in the resident 128x128 kernel; 128x64's
 * twin on blocks of 2 x 2 tiles (5 x 16 tiles, 72 k-blocks: 3 x 8 blocks;
 * A and B in boxes of 64 and 32 rows) in the resident 128x64 kernel. */
static void test_multicast_plan(void **state)
{
    static const twin_plan t[] = {
        {1100, 1200, 1000, "sm90_128x128", "bc_gemm_sm90_128x128m", "bc_resident_sm90_128x128", 1, 128, 64, 128, 128},
        {531, 976, 4552, NULL, "bc_gemm_sm90_128x64m", "bc_resident_sm90_128x64", 3, 64, 32, 128, 64},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        check_twin_resident(&t[i]);
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
 * within their bound, and a later wait sees the step complete. A stop that
 * timed out leaves the executor stopping: no step is rung until a stop
 * returns BC_OK (the kernel leaves once the rung steps are done), and after
 * a restart steps run and numbering continues. */
static void test_timeout_recovers(void **state)
{
    env e;
    bc_resident *res = pending_step(&e);
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
    assert_status(bc_resident_ring(res), BC_ERR_INVALID_ARGUMENT);
    bc_error_detail det;
    bc_last_error(&det);
    assert_non_null(strstr(det.message, "the executor is stopping"));
    assert_status(bc_resident_step(res, SEC), BC_ERR_INVALID_ARGUMENT);
    assert_ok(bc_resident_stop(res, SEC));
    assert_status(bc_resident_ring(res), BC_ERR_INVALID_ARGUMENT); /* stopped: not started */
    assert_ok(bc_resident_start(res, e.s));
    assert_ok(bc_resident_step(res, 5 * SEC));
    assert_ok(bc_resident_step(res, 5 * SEC));
    assert_ok(bc_resident_query(res, &in));
    assert_int_equal(in.steps_done, 4);
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

/* Two executors cannot share a stream: the second start is refused (its
 * kernel would wait behind the first, whose stop would wait for it). */
static void test_one_executor_a_stream(void **state)
{
    env e;
    bc_resident *a = started_mlp(&e); /* on e.s */
    assert_ok(bc_resident_step(a, 5 * SEC));
    bc_resident *b = NULL;
    assert_ok(bc_resident_create(e.dev, plans_of(&e), LAYERS, NULL, &b));
    assert_status(bc_resident_start(b, e.s), BC_ERR_INVALID_ARGUMENT);
    ft_assert_last(BC_ERR_INVALID_ARGUMENT, "stream", 0);
    bc_stream *other = NULL;
    assert_ok(bc_stream_create(e.dev, 0, &other, NULL));
    assert_ok(bc_resident_start(b, other)); /* its own stream: fine */
    assert_ok(bc_resident_step(b, 5 * SEC));
    assert_ok(bc_resident_stop(a, SEC));
    assert_ok(bc_resident_stop(b, SEC));
    assert_ok(bc_resident_start(b, e.s)); /* a's stream, free again */
    assert_ok(bc_resident_stop(b, SEC));
    bc_device_close(e.dev);
}

/* The default streams are shared, and their handles name no one stream
 * (NULL and CU_STREAM_LEGACY are the same legacy stream; CU_STREAM_PER_THREAD
 * is each thread's own): an executor is refused on any of them. */
static void test_no_default_stream(void **state)
{
    env e;
    env_open(&e);
    make_plans(&e);
    bc_resident *res = NULL;
    assert_ok(bc_resident_create(e.dev, plans_of(&e), LAYERS, NULL, &res));
    const CUstream pseudo[] = {NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD};
    for (int i = 0; i < 3; i++) {
        bc_stream *w = NULL;
        assert_ok(bc_stream_wrap(e.dev, pseudo[i], &w));
        assert_status(bc_resident_start(res, w), BC_ERR_INVALID_ARGUMENT);
        ft_assert_last(BC_ERR_INVALID_ARGUMENT, "stream", 0);
        bc_stream_destroy(w);
    }
    assert_ok(bc_resident_start(res, e.s)); /* a created stream: fine */
    assert_ok(bc_resident_stop(res, SEC));
    bc_device_close(e.dev);
}

/* A plan whose D lies outside the device arena (here the pinned host pool)
 * has the kernel release its arrivals at system scope, as an output copy
 * does; plans writing the device arena do not. */
static void test_plan_writing_host_memory(void **state)
{
    env e;
    env_open(&e);
    make_plans(&e);
    bc_resident *res = NULL;
    bc_resident_params p;
    assert_ok(bc_resident_create(e.dev, plans_of(&e), LAYERS, NULL, &res));
    assert_ok(bc_resident_start(res, e.s));
    program_of(fake_last_launch(), &p);
    assert_int_equal(p.sys_release, 0);
    assert_ok(bc_resident_stop(res, SEC));
    bc_resident_destroy(res);
    bc_gemm_desc d = layer_desc(&e, LAYERS - 1, "sm90_64x32");
    d.d = (bc_devptr)(uintptr_t)e.host_out; /* BATCH x 64 bf16: the pinned pool */
    bc_gemm_plan *pl = NULL;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &pl));
    assert_ok(bc_resident_create(e.dev, (const bc_gemm_plan *const *)&pl, 1, NULL, &res));
    assert_ok(bc_resident_start(res, e.s));
    program_of(fake_last_launch(), &p);
    assert_int_equal(p.sys_release, 1);
    assert_ok(bc_resident_stop(res, SEC));
    /* an input copy into the device arena alone: no system-scope release */
    const bc_resident_copy in_dev = {e.host_in, e.act[0], 4096};
    bc_resident_config rd;
    bc_resident_config_default(&rd);
    rd.inputs = &in_dev, rd.input_count = 1;
    assert_ok(bc_resident_create(e.dev, plans_of(&e), LAYERS, &rd, &res));
    assert_ok(bc_resident_start(res, e.s));
    program_of(fake_last_launch(), &p);
    assert_int_equal(p.sys_release, 0);
    assert_ok(bc_resident_stop(res, SEC));
    /* an input copy whose device side is host memory (another pinned block): the same as D there */
    void *staging = NULL;
    assert_ok(bc_host_alloc(e.dev, 4096, &staging));
    const bc_resident_copy in = {e.host_in, (bc_devptr)(uintptr_t)staging, 4096};
    bc_resident_config rc;
    bc_resident_config_default(&rc);
    rc.inputs = &in, rc.input_count = 1;
    assert_ok(bc_resident_create(e.dev, plans_of(&e), LAYERS, &rc, &res));
    assert_ok(bc_resident_start(res, e.s));
    program_of(fake_last_launch(), &p);
    assert_int_equal(p.sys_release, 1);
    assert_ok(bc_resident_stop(res, SEC));
    bc_device_close(e.dev);
}

/* The doorbell and completion words live in the pinned host pool: a device
 * opened without one is refused up front, naming the setting, before any
 * driver call. */
static void test_needs_the_host_pool(void **state)
{
    gemm_emu_install(-1);
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    cfg.kernel_groups = BC_KERNELS_ALL;
    cfg.device_arena_bytes = 1u << 20;
    cfg.host_arena_bytes = 0;
    bc_device *dev = NULL;
    assert_ok(bc_device_open(&cfg, &dev));
    bc_devptr a = 0;
    assert_ok(bc_mem_alloc(dev, 3 * 64 * 64 * 2, &a));
    bc_gemm_desc d;
    bc_gemm_desc_default(&d);
    d.m = d.n = d.k = 64, d.a = a, d.b = a + 8192, d.d = a + 16384, d.config = "sm90_64x32";
    bc_gemm_plan *pl = NULL;
    assert_ok(bc_gemm_plan_create(dev, &d, &pl));
    bc_resident *res = (bc_resident *)&d;
    const uint64_t calls = fake_calls();
    assert_status(bc_resident_create(dev, (const bc_gemm_plan *const *)&pl, 1, NULL, &res), BC_ERR_INVALID_ARGUMENT);
    assert_int_equal(fake_calls(), calls);
    assert_ptr_equal(res, (bc_resident *)&d);
    ft_assert_last(BC_ERR_INVALID_ARGUMENT, "host_arena_bytes", 0);
    bc_device_close(dev);
}

/* The GEMM emulator reads A and B with the pitches the plan gave the
 * kernel (its tensor maps' strides), so a plan with padded rows computes
 * right here, and one whose maps had the wrong pitch would not: checked
 * against the fp64 reference on a launched plan, A and B padded. */
static void test_emulator_honours_pitches(void **state)
{
    env e;
    env_open(&e);
    const int64_t m = 40, n = 48, k = 64, lda = k + 24, ldb = k + 8;
    bc_rng rng = {7};
    uint16_t *ha = malloc((size_t)(m * lda) * 2), *hb = malloc((size_t)(n * ldb) * 2), *hd = malloc((size_t)(m * n) * 2);
    bc_ref_fill_normal(ha, BC_DTYPE_BF16, (size_t)(m * lda), 1.0, &rng);
    bc_ref_fill_normal(hb, BC_DTYPE_BF16, (size_t)(n * ldb), 1.0, &rng);
    bc_gemm_desc d;
    bc_gemm_desc_default(&d);
    d.m = m, d.n = n, d.k = k, d.lda = lda, d.ldb = ldb, d.config = "sm90_64x32";
    assert_ok(bc_mem_alloc(e.dev, (size_t)(m * lda) * 2, &d.a));
    assert_ok(bc_mem_alloc(e.dev, (size_t)(n * ldb) * 2, &d.b));
    assert_ok(bc_mem_alloc(e.dev, (size_t)(m * n) * 2, &d.d));
    assert_ok(bc_memcpy_htod(e.dev, d.a, ha, (size_t)(m * lda) * 2));
    assert_ok(bc_memcpy_htod(e.dev, d.b, hb, (size_t)(n * ldb) * 2));
    bc_gemm_plan *pl = NULL;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &pl));
    assert_ok(bc_gemm_launch(pl, e.s));
    assert_ok(bc_stream_wait(e.s, SEC));
    assert_ok(bc_memcpy_dtoh(e.dev, hd, d.d, (size_t)(m * n) * 2));
    double ref[48];
    for (int64_t r = 0; r < m; r++) {
        bc_ref_gemm_row(&d, ha, hb, NULL, NULL, r, ref);
        for (int64_t c = 0; c < n; c++) {
            const double got = bc_ref_get(hd, BC_DTYPE_BF16, (size_t)(r * n + c));
            if (fabs(got - ref[c]) > 0.02 * fabs(ref[c]) + 0.05)
                fail_msg("D[%lld][%lld] = %g, reference %g", (long long)r, (long long)c, got, ref[c]);
        }
    }
    free(ha), free(hb), free(hd);
    bc_device_close(e.dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_program),           ft_test(test_steps_compute),  ft_test(test_timeout_recovers),
        ft_test(test_step_path_is_free), ft_test(test_split_program),  ft_test(test_multicast_plan),
        ft_test(test_one_executor_a_stream), ft_test(test_no_default_stream),
        ft_test(test_plan_writing_host_memory), ft_test(test_needs_the_host_pool),
        ft_test(test_emulator_honours_pitches),
    };
    return cmocka_run_group_tests_name("resident", tests, NULL, NULL);
}
