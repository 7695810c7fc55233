/* GEMV plans in the resident executor, on the fake driver: the program's
 * GEMV operations (their operands where a tile plan has its tensor maps,
 * the launched grid as work items, the split ones' counters and slots
 * beside 128x64's tiles'), the kernel they run in (alone: 64x32m16's;
 * beside tile plans: 128x64's only), and steps that compute (the GEMM
 * emulator runs each operation from the program). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "resident_env.h"

/* The MLP on GEMV plans (named: the rule keeps resident plans on the
 * tiles): one executor of 64x32m16's kernel with 256 threads, each operation the plan's operands
 * and grid; three steps right against the reference. */
static void test_gemv_program(void **state)
{
    env e;
    env_open(&e);
    for (int l = 0; l < LAYERS; l++) {
        bc_gemm_desc d = layer_desc(&e, l, "sm90_gemv");
        assert_ok(bc_gemm_plan_create(e.dev, &d, &e.plan[l]));
        bc_gemm_plan_info pi;
        assert_ok(bc_gemm_plan_query(e.plan[l], &pi));
        assert_string_equal(pi.config, "sm90_gemv");
    }
    bc_resident_copy cin, cout;
    bc_resident_config c = io_config(&e, &cin, &cout);
    bc_resident *res = NULL;
    assert_ok(bc_resident_create(e.dev, plans_of(&e), LAYERS, &c, &res));
    bc_resident_info in;
    assert_ok(bc_resident_query(res, &in));
    assert_string_equal(in.config, "sm90_64x32m16");
    assert_int_equal(in.partial_bytes, 0);
    assert_int_equal(in.sm_count, 1024 / 8); /* the widest phase's runs of 8 rows */
    assert_ok(bc_resident_start(res, e.s));
    const fake_launch *fl = fake_last_launch();
    assert_string_equal(fl->kernel, "bc_resident_sm90_64x32m16");
    assert_int_equal(fl->block[0], 256);
    bc_resident_params p;
    const bc_resident_op *ops = program_of(fl, &p);
    for (int l = 0; l < LAYERS; l++) {
        const bc_resident_op *op = &ops[1 + l]; /* after the input copy */
        const bc_gemm_params *gp = &e.plan[l]->params;
        assert_int_equal(op->x.kind, BC_RESIDENT_OP_GEMV);
        bc_resident_gemv g;
        memcpy(&g, op->tmap_a, sizeof g);
        assert_int_equal(g.a, e.act[l]), assert_int_equal(g.b, e.w[l]);
        assert_int_equal(g.lda, width[l]), assert_int_equal(g.ldb, width[l]), assert_int_equal(g.k, width[l]);
        assert_int_equal(op->x.tiles_m, gp->tiles_m), assert_int_equal(op->x.tiles_n, 1);
        assert_int_equal(op->x.split, 1), assert_int_equal(op->x.group_m, 1);
        assert_int_equal(op->x.phase_tiles, width[l + 1] / 8);
        assert_int_equal(op->x.prefetch_b, 0); /* no tensor maps to load early from */
        assert_int_equal(op->x.barrier, 1); /* after the input copy, then after the layer before */
    }
    for (int step = 1; step <= 3; step++) {
        bc_ref_fill_normal(e.host_in, BC_DTYPE_BF16, (size_t)(BATCH * width[0]), 1.0, &e.rng);
        memset(e.host_out, 0xFF, (size_t)(BATCH * width[LAYERS]) * 2);
        assert_ok(bc_resident_step(res, 5 * SEC));
        check_mlp(&e, e.host_in, e.host_out);
    }
    bc_resident_destroy(res);
    assert_int_equal(fake_resident_misuse(), 0);
    for (int l = 0; l < LAYERS; l++)
        bc_gemm_plan_destroy(e.plan[l]);
    bc_device_close(e.dev);
}

/* Two GEMV plans split over clusters in one phase (9 x 600 x 4096: 75 runs
 * of 8 rows, 2 ways; 5 x 40 x 16384: 5 runs, 8 ways): one arrival counter
 * a run, one 4 KiB slot a work item, each plan's after the other's. */
static void test_gemv_split_slots(void **state)
{
    env e;
    env_open(&e);
    static const int64_t shape[2][3] = {{9, 600, 4096}, {5, 40, 16384}};
    static const uint32_t split[2] = {2, 8}, runs[2] = {75, 5};
    bc_gemm_plan *pl[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        bc_devptr a = 0, b = 0, dd = 0;
        assert_ok(bc_mem_alloc(e.dev, (size_t)(shape[i][0] * shape[i][2]) * 2, &a));
        assert_ok(bc_mem_alloc(e.dev, (size_t)(shape[i][1] * shape[i][2]) * 2, &b));
        assert_ok(bc_mem_alloc(e.dev, (size_t)(shape[i][0] * shape[i][1]) * 2, &dd));
        bc_gemm_desc d;
        bc_gemm_desc_default(&d);
        d.m = shape[i][0], d.n = shape[i][1], d.k = shape[i][2], d.a = a, d.b = b, d.d = dd;
        d.config = "sm90_gemv";
        assert_ok(bc_gemm_plan_create(e.dev, &d, &pl[i]));
        assert_int_equal(pl[i]->params.split_k, split[i]);
        assert_int_equal(pl[i]->params.tiles_m, runs[i]);
    }
    bc_resident *res = NULL;
    assert_ok(bc_resident_create(e.dev, (const bc_gemm_plan *const *)pl, 2, NULL, &res));
    bc_resident_info in;
    assert_ok(bc_resident_query(res, &in));
    const uint32_t items0 = 75 * 2, items1 = 5 * 8;
    assert_int_equal(in.partial_bytes, (uint64_t)(items0 + items1) * BC_RESIDENT_GEMV_SLOT_BYTES);
    assert_int_equal(in.barriers, 0); /* independent: one phase */
    assert_int_equal(in.sm_count, 132);
    assert_ok(bc_resident_start(res, e.s));
    bc_resident_params p;
    const bc_resident_op *ops = program_of(fake_last_launch(), &p);
    assert_int_equal(ops[0].x.kind, BC_RESIDENT_OP_GEMV), assert_int_equal(ops[1].x.kind, BC_RESIDENT_OP_GEMV);
    assert_int_equal(ops[0].x.split, 2), assert_int_equal(ops[1].x.split, 8);
    assert_int_equal(ops[0].x.tile0, 0), assert_int_equal(ops[1].x.tile0, items0);
    assert_int_equal(ops[0].x.phase_tiles, items0 + items1);
    assert_int_equal(ops[0].x.ctr0, 0), assert_int_equal(ops[1].x.ctr0, 75);
    const uint32_t sync_bytes = BC_RESIDENT_SYNC_CTR + 512; /* 80 counters, rounded up to 256 bytes */
    assert_int_equal(ops[0].x.ws_off, sync_bytes);
    assert_int_equal(ops[1].x.ws_off, sync_bytes + items0 * BC_RESIDENT_GEMV_SLOT_BYTES);
    assert_ok(bc_resident_stop(res, SEC));
    bc_resident_destroy(res);
    bc_gemm_plan_destroy(pl[0]);
    bc_gemm_plan_destroy(pl[1]);
    bc_device_close(e.dev);
}

/* Beside tile plans a GEMV plan runs in 128x64's kernel (its twin's too),
 * with that kernel's threads; beside the others' it is refused, whichever
 * plan comes first (the kernels of one consumer warpgroup: a mix that
 * racecheck does not pass; 128x128's: no registers for it). */
static void test_gemv_beside_tiles(void **state)
{
    env e;
    env_open(&e);
    bc_gemm_plan *gemv = NULL, *wide = NULL, *big = NULL, *narrow = NULL;
    bc_gemm_desc d = layer_desc(&e, 2, "sm90_gemv"); /* 16 x 64 x 1024 */
    assert_ok(bc_gemm_plan_create(e.dev, &d, &gemv));
    assert_string_equal(gemv->config->name, "sm90_gemv");
    d = layer_desc(&e, 0, "sm90_128x64");
    assert_ok(bc_gemm_plan_create(e.dev, &d, &wide));
    d = layer_desc(&e, 0, "sm90_128x128");
    assert_ok(bc_gemm_plan_create(e.dev, &d, &big));
    d = layer_desc(&e, 0, "sm90_64x32m16");
    assert_ok(bc_gemm_plan_create(e.dev, &d, &narrow));
    const bc_gemm_plan *pair[2] = {gemv, wide};
    bc_resident *res = NULL;
    assert_ok(bc_resident_create(e.dev, pair, 2, NULL, &res));
    bc_resident_info in;
    assert_ok(bc_resident_query(res, &in));
    assert_string_equal(in.config, "sm90_128x64");
    assert_ok(bc_resident_start(res, e.s));
    const fake_launch *fl = fake_last_launch();
    assert_string_equal(fl->kernel, "bc_resident_sm90_128x64");
    assert_int_equal(fl->block[0], 384);
    assert_ok(bc_resident_stop(res, SEC));
    bc_resident_destroy(res);
    bc_error_detail det;
    const bc_gemm_plan *refused[2] = {big, narrow};
    for (int i = 0; i < 2; i++) {
        pair[0] = gemv, pair[1] = refused[i];
        expect_reject(&e, pair, 2, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
        bc_last_error(&det);
        assert_non_null(strstr(det.message, "alone or beside sm90_128x64 and sm90_128x64t plans only"));
        pair[0] = refused[i], pair[1] = gemv;
        expect_reject(&e, pair, 2, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
        bc_last_error(&det);
        assert_non_null(strstr(det.message, "plans[1] uses sm90_gemv, plans[0] sm90_"));
    }
    /* the 32-row twin has no resident kernel (its partials would not fit the executor's staging buffer) */
    bc_gemm_plan *twin = NULL;
    d = layer_desc(&e, 2, "sm90_gemv32");
    d.m = 24, d.k = 512, d.d = e.act[1]; /* within the operands' blocks */
    assert_ok(bc_gemm_plan_create(e.dev, &d, &twin));
    const bc_gemm_plan *one[1] = {twin};
    expect_reject(&e, one, 1, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    bc_last_error(&det);
    assert_non_null(strstr(det.message, "plans[0] uses sm90_gemv32, which has no resident kernel"));
    bc_gemm_plan_destroy(twin);
    /* tile plans of two kernels stay refused with a GEMV plan between them */
    const bc_gemm_plan *three[3] = {wide, gemv, narrow};
    expect_reject(&e, three, 3, NULL, BC_ERR_INVALID_ARGUMENT, "plans");
    bc_last_error(&det);
    assert_non_null(strstr(det.message, "plans[2] uses sm90_64x32m16, plans[0] sm90_128x64: every tile plan"));
    bc_gemm_plan_destroy(gemv);
    bc_gemm_plan_destroy(wide);
    bc_gemm_plan_destroy(big);
    bc_gemm_plan_destroy(narrow);
    bc_device_close(e.dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_gemv_program),
        ft_test(test_gemv_split_slots),
        ft_test(test_gemv_beside_tiles),
    };
    return cmocka_run_group_tests_name("resident_gemv", tests, NULL, NULL);
}
