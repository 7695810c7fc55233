/* GPU tests of user modules: the nvcc-built fixture (tests/fixtures/) loads
 * from a file with its digest and runs through kernel plans; a user kernel
 * reads a rank-3 tensor through a user tensor map (TMA) against a CPU
 * reference, zero and NaN fill past the edges, and a new address; PTX is
 * JIT-compiled only when asked; a graph mixes a GEMM and a user kernel and
 * is updated in place; bad inputs get their own status from the real driver
 * and leave the device usable. Fresh random inputs (seed printed; BC_SEED
 * replays), poisoned outputs. Run from the repository root. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.h"
#include "ref.h"
#include "../fixtures/fixture_params.h"

#define FIX "tests/fixtures/"
#define DIGEST_FATBIN 0xaa1322c8a27341faull

static bc_rng rng;

static void fill(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)bc_rng_normal(&rng);
}

static bc_devptr dalloc(gpu_env *e, size_t bytes)
{
    bc_devptr p = 0;
    CHECK_BC(bc_mem_alloc(e->dev, bytes, &p));
    return p;
}

static bc_module *load(gpu_env *e, const char *path, int jit)
{
    bc_module_options o;
    bc_module_options_default(&o);
    o.allow_ptx_jit = jit;
    bc_module *m = NULL;
    CHECK_BC(bc_module_load_file(e->dev, path, &o, &m));
    return m;
}

/* y = a*x + y on the GPU through `k`, checked against fp64 (one fp32
 * rounding, or two without FMA: 2^-22 relative covers both). */
static void run_saxpy(gpu_env *e, bc_kernel *k, int32_t n)
{
    size_t bytes = (size_t)n * 4;
    float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
    fill(x, (size_t)n), fill(y, (size_t)n);
    bc_devptr dx = dalloc(e, bytes), dy = dalloc(e, bytes);
    CHECK_BC(bc_memcpy_htod(e->dev, dx, x, bytes));
    CHECK_BC(bc_memcpy_htod(e->dev, dy, y, bytes));
    fixture_saxpy v;
    fixture_saxpy_desc(&v, 1.75f, dx, dy, n);
    bc_kernel_plan *p = NULL;
    CHECK_BC(bc_kernel_plan_create(k, &v.d, &p));
    CHECK_BC(bc_kernel_launch(p, e->s));
    CHECK_BC(bc_stream_wait(e->s, 5000000000ull));
    CHECK_BC(bc_memcpy_dtoh(e->dev, out, dy, bytes));
    for (int32_t i = 0; i < n; i++) {
        double want = 1.75 * (double)x[i] + (double)y[i];
        if (fabs(out[i] - want) > 2.5e-7 * fabs(want) + 1e-30)
            fail_msg("saxpy element %d: %.9g, want %.9g", i, out[i], want);
    }
    /* a new a and a shorter n, in place: y' = -0.5*x + y (only the first half changes again) */
    float a2 = -0.5f;
    int32_t half = n / 2;
    CHECK_BC(bc_kernel_plan_set_param(p, 0, &a2, 4));
    CHECK_BC(bc_kernel_plan_set_param(p, 3, &half, 4));
    CHECK_BC(bc_kernel_launch(p, e->s));
    CHECK_BC(bc_stream_wait(e->s, 5000000000ull));
    float *out2 = malloc(bytes);
    CHECK_BC(bc_memcpy_dtoh(e->dev, out2, dy, bytes));
    for (int32_t i = 0; i < n; i++) {
        double want = i < half ? -0.5 * (double)x[i] + (double)out[i] : (double)out[i];
        if (fabs(out2[i] - want) > 2.5e-7 * fabs(want) + 1e-30)
            fail_msg("saxpy after set_param, element %d: %.9g, want %.9g", i, out2[i], want);
    }
    bc_kernel_plan_destroy(p);
    CHECK_BC(bc_mem_free(e->dev, dx));
    CHECK_BC(bc_mem_free(e->dev, dy));
    free(x), free(y), free(out), free(out2);
}

static void test_nvcc_fixture_runs(void **state)
{
    gpu_env *e = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(e))
        skip(); /* the fixture's cubins are sm_90a and sm_80 */
    bc_module_options o;
    bc_module_options_default(&o);
    const char *names[] = {"fixture_saxpy", "fixture_tma_box"};
    o.kernels = names, o.kernel_count = 2;
    o.check_digest = 1, o.expected_digest = DIGEST_FATBIN;
    bc_module *m = NULL;
    CHECK_BC(bc_module_load_file(e->dev, FIX "user_kernels.fatbin", &o, &m));
    bc_module_info mi;
    CHECK_BC(bc_module_query(m, &mi));
    assert_string_equal(mi.arch, "sm_90a");
    assert_int_equal(mi.jit, 0);
    bc_kernel *k = NULL, *box = NULL;
    CHECK_BC(bc_kernel_get(m, "fixture_saxpy", &k));
    CHECK_BC(bc_kernel_get(m, "fixture_tma_box", &box));
    bc_kernel_info ki;
    CHECK_BC(bc_kernel_query(k, &ki));
    print_message("fixture_saxpy: %d registers, %d params (driver signature %s)\n", ki.registers, ki.param_count,
                  ki.param_count >= 0 ? "known" : "unknown: driver before CUDA 12.4");
    if (ki.param_count >= 0) {
        assert_int_equal(ki.param_count, 4);
        static const uint32_t off[] = {0, 8, 16, 24}, size[] = {4, 8, 8, 4};
        for (int i = 0; i < 4; i++)
            assert_true(ki.param_offset[i] == off[i] && ki.param_size[i] == size[i]);
        CHECK_BC(bc_kernel_query(box, &ki));
        assert_int_equal(ki.param_size[0], 128);
        assert_true(ki.param_offset[1] >= ki.param_offset[0] + 128); /* the pointer after the 128-byte map */
        print_message("fixture_tma_box: the map at parameter offset %u (the driver's layout; the plan packs there)\n",
                      ki.param_offset[0]);
        assert_int_equal(ki.max_threads_per_block, 128); /* __launch_bounds__(128) */
    }
    run_saxpy(e, k, 100003);
    CHECK_BC(bc_module_unload(m));
    /* the plain cubin, no container */
    m = load(e, FIX "user_kernels_sm90a.cubin", 0);
    CHECK_BC(bc_kernel_get(m, "fixture_saxpy", &k));
    run_saxpy(e, k, 4097);
    CHECK_BC(bc_module_unload(m));
}

/* fixture_tma_box over a rank-3 f32 tensor (dims 100 x 30 x 7, rows padded
 * to 128 floats), one 16 x 4 x 2 box per block, into a dense output padded
 * to whole boxes (112 x 32 x 8). */
#define TX 100
#define TY 30
#define TZ 7
#define ROW 128
#define OX 112
#define OY 32
#define OZ 8

static void run_box(gpu_env *e, bc_kernel_plan *p, bc_devptr out, const float *src, int oob_nan)
{
    const size_t obytes = (size_t)OX * OY * OZ * 4;
    float *h = malloc(obytes);
    for (size_t i = 0; i < (size_t)OX * OY * OZ; i++)
        h[i] = 12345.0f; /* poison: every element is written */
    CHECK_BC(bc_memcpy_htod(e->dev, out, h, obytes));
    CHECK_BC(bc_kernel_launch(p, e->s));
    CHECK_BC(bc_stream_wait(e->s, 5000000000ull));
    CHECK_BC(bc_memcpy_dtoh(e->dev, h, out, obytes));
    size_t in = 0, fill_n = 0;
    for (int z = 0; z < OZ; z++)
        for (int y = 0; y < OY; y++)
            for (int x = 0; x < OX; x++) {
                float got = h[((size_t)z * OY + y) * OX + x];
                if (x < TX && y < TY && z < TZ) {
                    float want = src[((size_t)z * TY + y) * ROW + x];
                    if (memcmp(&got, &want, 4) != 0)
                        fail_msg("box element (%d, %d, %d): %.9g, want %.9g", x, y, z, got, want);
                    in++;
                } else {
                    if (oob_nan ? !isnan(got) : got != 0.0f)
                        fail_msg("out-of-bounds element (%d, %d, %d) is %.9g, want %s", x, y, z, got,
                                 oob_nan ? "NaN" : "0");
                    fill_n++;
                }
            }
    assert_int_equal(in, (size_t)TX * TY * TZ);
    print_message("tensor-map box copy: %zu elements exact, %zu filled with %s\n", in, fill_n, oob_nan ? "NaN" : "0");
    free(h);
}

static void test_user_tensor_map(void **state)
{
    gpu_env *e = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(e))
        skip();
    const size_t tbytes = (size_t)ROW * TY * TZ * 4;
    float *t1 = malloc(tbytes), *t2 = malloc(tbytes);
    fill(t1, (size_t)ROW * TY * TZ), fill(t2, (size_t)ROW * TY * TZ);
    bc_devptr d1 = dalloc(e, tbytes), d2 = dalloc(e, tbytes), out = dalloc(e, (size_t)OX * OY * OZ * 4);
    CHECK_BC(bc_memcpy_htod(e->dev, d1, t1, tbytes));
    CHECK_BC(bc_memcpy_htod(e->dev, d2, t2, tbytes));
    bc_module *m = load(e, FIX "user_kernels.fatbin", 0);
    bc_kernel *box = NULL;
    CHECK_BC(bc_kernel_get(m, "fixture_tma_box", &box));
    for (int oob_nan = 0; oob_nan <= 1; oob_nan++) {
        bc_tensor_map_desc td;
        CHECK_BC(bc_tensor_map_desc_default(&td));
        td.dtype = BC_TMAP_F32, td.rank = 3, td.base = d1;
        td.dims[0] = TX, td.dims[1] = TY, td.dims[2] = TZ;
        td.strides_bytes[0] = ROW * 4, td.strides_bytes[1] = (uint64_t)ROW * 4 * TY;
        td.box[0] = 16, td.box[1] = 4, td.box[2] = 2;
        td.oob_nan = oob_nan;
        bc_tensor_map map;
        CHECK_BC(bc_tensor_map_encode(e->dev, &td, &map));
        int32_t cols = OX, rows = OY;
        bc_kernel_param kp[4] = {{&map, sizeof map, 0}, {&out, 8, (uint64_t)OX * OY * OZ * 4}, {&cols, 4, 0},
                                 {&rows, 4, 0}};
        bc_kernel_plan_desc d = {.grid = {OX / 16, OY / 4, OZ / 2}, .block = {128, 1, 1}, .params = kp,
                                 .param_count = 4};
        bc_kernel_plan *p = NULL;
        CHECK_BC(bc_kernel_plan_create(box, &d, &p));
        run_box(e, p, out, t1, oob_nan);
        /* the same map pointed at the second tensor, handed to the plan in place */
        CHECK_BC(bc_tensor_map_set_address(e->dev, &map, d2));
        CHECK_BC(bc_kernel_plan_set_param(p, 0, &map, sizeof map));
        run_box(e, p, out, t2, oob_nan);
        bc_kernel_plan_destroy(p);
    }
    CHECK_BC(bc_module_unload(m));
    free(t1), free(t2);
}

static void test_jit_only_when_asked(void **state)
{
    gpu_env *e = GPU_ENV_OR_SKIP(state);
    bc_module *m = NULL;
    assert_int_equal(bc_module_load_file(e->dev, FIX "user_kernels_ptx.fatbin", NULL, &m), BC_ERR_UNSUPPORTED_ARCH);
    m = load(e, FIX "user_kernels_ptx.fatbin", 1);
    bc_module_info mi;
    CHECK_BC(bc_module_query(m, &mi));
    assert_int_equal(mi.jit, 1);
    assert_string_equal(mi.arch, "compute_80");
    bc_kernel *k = NULL;
    CHECK_BC(bc_kernel_get(m, "fixture_saxpy", &k));
    run_saxpy(e, k, 65537);
    CHECK_BC(bc_module_unload(m));
}

/* One graph: GEMM D = A.B^T (f32 out), then saxpy D = a*X + D; replayed,
 * then the saxpy node updated in place. */
static void test_mixed_graph(void **state)
{
    gpu_env *e = GPU_ENV_OR_SKIP(state);
    const int64_t M = 96, N = 160, K = 256;
    bc_gemm_desc g;
    bc_gemm_desc_default(&g);
    g.m = M, g.n = N, g.k = K, g.d_type = BC_DTYPE_F32;
    uint16_t *ha = malloc((size_t)(M * K) * 2), *hb = malloc((size_t)(N * K) * 2);
    bc_ref_fill_normal(ha, BC_DTYPE_BF16, (size_t)(M * K), 1.0, &rng);
    bc_ref_fill_normal(hb, BC_DTYPE_BF16, (size_t)(N * K), 1.0, &rng);
    float *hx = malloc((size_t)(M * N) * 4), *hd = malloc((size_t)(M * N) * 4);
    fill(hx, (size_t)(M * N));
    g.a = dalloc(e, (size_t)(M * K) * 2), g.b = dalloc(e, (size_t)(N * K) * 2), g.d = dalloc(e, (size_t)(M * N) * 4);
    bc_devptr dx = dalloc(e, (size_t)(M * N) * 4);
    CHECK_BC(bc_memcpy_htod(e->dev, g.a, ha, (size_t)(M * K) * 2));
    CHECK_BC(bc_memcpy_htod(e->dev, g.b, hb, (size_t)(N * K) * 2));
    CHECK_BC(bc_memcpy_htod(e->dev, dx, hx, (size_t)(M * N) * 4));
    bc_gemm_plan *gp = NULL;
    CHECK_BC(bc_gemm_plan_create(e->dev, &g, &gp));
    bc_module *m = load(e, FIX "user_kernels.fatbin", 0);
    bc_kernel *k = NULL;
    CHECK_BC(bc_kernel_get(m, "fixture_saxpy", &k));
    fixture_saxpy v;
    fixture_saxpy_desc(&v, 2.0f, dx, g.d, (int32_t)(M * N));
    bc_kernel_plan *kp = NULL;
    CHECK_BC(bc_kernel_plan_create(k, &v.d, &kp));
    const bc_graph_node nodes[2] = {{BC_NODE_GEMM, gp, NULL}, {BC_NODE_KERNEL, NULL, kp}};
    bc_graph *graph = NULL;
    CHECK_BC(bc_graph_create_nodes(e->s, nodes, 2, &graph));
    assert_int_equal(bc_module_unload(m), BC_ERR_IN_USE);
    double *ref = malloc((size_t)N * 8);
    for (int pass = 0; pass < 2; pass++) {
        const double a = pass == 0 ? 2.0 : -1.0;
        for (int rep = 0; rep < 3; rep++) { /* the GEMM rewrites D each replay: the result is the same */
            CHECK_BC(bc_memset_d8_async(e->s, g.d, 0xFF, (size_t)(M * N) * 4));
            CHECK_BC(bc_graph_launch(graph, e->s));
        }
        CHECK_BC(bc_stream_wait(e->s, 5000000000ull));
        CHECK_BC(bc_memcpy_dtoh(e->dev, hd, g.d, (size_t)(M * N) * 4));
        for (int64_t r = 0; r < M; r++) {
            bc_ref_gemm_row(&g, ha, hb, NULL, NULL, r, ref);
            for (int64_t c = 0; c < N; c++) {
                double want = a * hx[r * N + c] + ref[c];
                double got = hd[r * N + c];
                if (!(fabs(got - want) <= 1e-5 * fabs(want) + 1e-4 * sqrt((double)K)))
                    fail_msg("pass %d: D[%lld][%lld] = %.9g, want %.9g", pass, (long long)r, (long long)c, got,
                             want);
            }
        }
        float a2 = -1.0f;
        CHECK_BC(bc_kernel_plan_set_param(kp, 0, &a2, 4));
        CHECK_BC(bc_graph_update_node(graph, 1, &nodes[1]));
    }
    bc_graph_destroy(graph);
    bc_kernel_plan_destroy(kp);
    CHECK_BC(bc_module_unload(m));
    bc_gemm_plan_destroy(gp);
    free(ha), free(hb), free(hx), free(hd), free(ref);
}

static void expect(bc_status got, bc_status want, const char *what)
{
    if (got != want) {
        bc_error_detail d;
        bc_last_error(&d);
        fail_msg("%s: %s, want %s (%s)", what, bc_status_string(got), bc_status_string(want), d.message);
    }
    bc_error_detail d;
    bc_last_error(&d);
    print_message("refused as it should: %s: %s\n", what, d.message);
}

/* Each bad input from the real driver's point of view, then the device
 * still runs the fixture. */
static void test_bad_inputs(void **state)
{
    gpu_env *e = GPU_ENV_OR_SKIP(state);
    if (!gpu_is_hopper(e))
        skip();
    bc_module_options o;
    bc_module_options_default(&o);
    const char *names[] = {"fixture_saxpy", "fixture_gone"};
    o.kernels = names, o.kernel_count = 2;
    bc_module *m = NULL;
    expect(bc_module_load_file(e->dev, FIX "user_kernels.fatbin", &o, &m), BC_ERR_MISSING_KERNEL, "missing kernel");
    o.kernel_count = 0, o.check_digest = 1, o.expected_digest = DIGEST_FATBIN + 1;
    expect(bc_module_load_file(e->dev, FIX "user_kernels.fatbin", &o, &m), BC_ERR_DIGEST_MISMATCH, "digest");
    expect(bc_module_load_file(e->dev, FIX "README.md", NULL, &m), BC_ERR_FATBIN_CORRUPT, "not a module");
    m = load(e, FIX "user_kernels.fatbin", 0);
    bc_kernel *k = NULL, *box = NULL;
    CHECK_BC(bc_kernel_get(m, "fixture_saxpy", &k));
    CHECK_BC(bc_kernel_get(m, "fixture_tma_box", &box));
    bc_devptr x = dalloc(e, 1 << 20), y = dalloc(e, 1 << 20);
    fixture_saxpy v;
    fixture_saxpy_desc(&v, 1.0f, x, y, 1000);
    bc_kernel_plan *p = NULL;
    bc_kernel_info ki;
    CHECK_BC(bc_kernel_query(k, &ki));
    if (ki.param_count >= 0) {
        bc_kernel_plan_desc d = v.d;
        d.param_count = 3;
        expect(bc_kernel_plan_create(k, &d, &p), BC_ERR_PARAM_MISMATCH, "parameter count");
        double a64 = 1.0;
        bc_kernel_param bad[4];
        memcpy(bad, v.p, sizeof bad);
        bad[0] = (bc_kernel_param){&a64, 8, 0};
        d = v.d, d.params = bad;
        expect(bc_kernel_plan_create(k, &d, &p), BC_ERR_PARAM_MISMATCH, "parameter size");
    }
    uint8_t map[128] = {0};
    int32_t i4 = 0;
    bc_kernel_param bp[4] = {{map, 128, 0}, {&x, 8, 0}, {&i4, 4, 0}, {&i4, 4, 0}};
    bc_kernel_plan_desc bd = {.grid = {1, 1, 1}, .block = {256, 1, 1}, .params = bp, .param_count = 4};
    expect(bc_kernel_plan_create(box, &bd, &p), BC_ERR_LAUNCH_CONFIG, "block over __launch_bounds__(128)");
    bc_device_info di;
    CHECK_BC(bc_device_query(e->dev, &di));
    bc_kernel_plan_desc d = v.d;
    d.dynamic_smem_bytes = (uint32_t)di.smem_per_block_optin + 1;
    expect(bc_kernel_plan_create(k, &d, &p), BC_ERR_LAUNCH_CONFIG, "shared memory over the opt-in limit");
    d = v.d, d.grid[0] = 12, d.cluster[0] = 8;
    expect(bc_kernel_plan_create(k, &d, &p), BC_ERR_CLUSTER, "cluster not dividing the grid");
    d = v.d, d.grid[0] = 32, d.cluster[0] = 32;
    expect(bc_kernel_plan_create(k, &d, &p), BC_ERR_CLUSTER, "cluster of 32 CTAs");
    /* the largest cluster with the largest blocks: scheduled only if the driver says it fits */
    d = v.d, d.grid[0] = 16, d.cluster[0] = 16, d.block[0] = 1024;
    d.dynamic_smem_bytes = (uint32_t)(di.smem_per_block_optin - ki.static_smem_bytes);
    bc_status st = bc_kernel_plan_create(k, &d, &p);
    print_message("16-CTA cluster of 1024 threads and %u bytes of shared memory each: %s\n", d.dynamic_smem_bytes,
                  bc_status_string(st));
    assert_true(st == BC_OK || st == BC_ERR_CLUSTER);
    if (st == BC_OK) {
        CHECK_BC(bc_kernel_launch(p, e->s));
        CHECK_BC(bc_stream_wait(e->s, 5000000000ull));
        bc_kernel_plan_destroy(p);
    }
    /* unload while a plan (then a graph) uses the module */
    CHECK_BC(bc_kernel_plan_create(k, &v.d, &p));
    expect(bc_module_unload(m), BC_ERR_IN_USE, "unload under a plan");
    const bc_graph_node n[1] = {{BC_NODE_KERNEL, NULL, p}};
    bc_graph *graph = NULL;
    CHECK_BC(bc_graph_create_nodes(e->s, n, 1, &graph));
    bc_kernel_plan_destroy(p);
    expect(bc_module_unload(m), BC_ERR_IN_USE, "unload under a graph");
    CHECK_BC(bc_graph_launch(graph, e->s));
    CHECK_BC(bc_stream_wait(e->s, 5000000000ull));
    bc_graph_destroy(graph);
    CHECK_BC(bc_module_unload(m));
    /* still usable */
    m = load(e, FIX "user_kernels.fatbin", 0);
    CHECK_BC(bc_kernel_get(m, "fixture_saxpy", &k));
    run_saxpy(e, k, 3333);
    CHECK_BC(bc_module_unload(m));
}

static int setup(void **state)
{
    uint64_t seed = bc_ref_seed();
    rng.s = seed;
    print_message("seed %llu (BC_SEED=%llu replays)\n", (unsigned long long)seed, (unsigned long long)seed);
    return gpu_env_setup(state, 256u << 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvcc_fixture_runs),  cmocka_unit_test(test_user_tensor_map),
        cmocka_unit_test(test_jit_only_when_asked), cmocka_unit_test(test_mixed_graph),
        cmocka_unit_test(test_bad_inputs),
    };
    gpu_test_filters();
    return cmocka_run_group_tests_name("gpu_module", tests, setup, gpu_env_teardown);
}
