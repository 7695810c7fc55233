/* GPU: the bad pointers that used to reach the GPU and fault it are refused
 * at plan time and by set_pointers, and the device keeps working: a good
 * GEMM afterwards (on the same plan, and replayed from a graph) matches the
 * fp64 CPU reference. Also prints what the checks cost on this machine:
 * plan creation and set_pointers with operands in the arena, in memory the
 * driver must describe (cuPointerGetAttributes), and in a registered range.
 *
 * Foreign memory comes from a second device handle on the primary context
 * (the same context: addressable, unknown to the first device's pools).
 * Without a GPU every test is SKIPPED. compute-sanitizer memcheck must find
 * nothing here: no refused operand reaches a kernel. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "gpu_common.h"
#include "gpu_dryrun.h"
#include "gpu_small_gemm.h"

#define PM 192
#define PN 320
#define PK 128

typedef struct fixture {
    bc_device *dev, *other; /* both on the primary context */
    bc_stream *s;
    bc_status open_status;
} fixture;

static fixture fx;

static int setup(void **state)
{
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    cfg.use_primary_context = 1;
    cfg.device_arena_bytes = 128u << 20;
    cfg.host_arena_bytes = 8u << 20;
    fx.open_status = bc_device_open(&cfg, &fx.dev);
    if (!fx.open_status)
        fx.open_status = bc_device_open(&cfg, &fx.other);
    if (!fx.open_status)
        fx.open_status = bc_stream_create(fx.dev, 0, &fx.s, NULL);
    if (fx.open_status)
        fprintf(stderr, "gpu tests: no usable GPU (%s): tests will be SKIPPED\n", bc_status_string(fx.open_status));
    *state = &fx;
    return 0;
}

static int teardown(void **state)
{
    bc_device_close(fx.other);
    bc_device_close(fx.dev);
    return 0;
}

#define SKIP_WITHOUT_GPU()                                                                           \
    do {                                                                                             \
        if (fx.open_status)                                                                          \
            skip();                                                                                  \
    } while (0)

static bc_devptr blk(bc_device *dev, size_t bytes)
{
    bc_devptr p = 0;
    CHECK_BC(bc_mem_alloc(dev, bytes, &p));
    return p;
}

/* A good M x N x K (PM, PN, PK) bf16 -> f32 problem with its own blocks. */
static small_gemm good(void)
{
    small_gemm g;
    memset(&g, 0, sizeof g);
    bc_gemm_desc_default(&g.d);
    g.d.m = PM, g.d.n = PN, g.d.k = PK, g.d.d_type = BC_DTYPE_F32;
    g.d.a = blk(fx.dev, PM * PK * 2), g.d.b = blk(fx.dev, PN * PK * 2), g.d.d = blk(fx.dev, PM * PN * 4);
    return g;
}

static void refused(const bc_gemm_desc *d, bc_status want, const char *what)
{
    bc_gemm_plan *plan = NULL;
    bc_status st = bc_gemm_plan_create(fx.dev, d, &plan);
    bc_error_detail det;
    bc_last_error(&det);
    print_message("  %-34s -> %s: %s\n", what, bc_status_string(st), st ? det.message : "");
    if (st != want)
        fail_msg("%s: %s, want %s", what, bc_status_string(st), bc_status_string(want));
    assert_null(plan);
}

static void test_bad_pointers_refused(void **state)
{
    SKIP_WITHOUT_GPU();
    small_gemm g = good();
    bc_gemm_desc d;
    /* 16-byte aligned, otherwise valid, not device memory: pageable host memory */
    void *pa = aligned_alloc(256, PM * PK * 2), *pb = aligned_alloc(256, PN * PK * 2);
    d = g.d, d.a = (bc_devptr)(uintptr_t)pa, d.b = (bc_devptr)(uintptr_t)pb;
    refused(&d, BC_ERR_WRONG_DEVICE, "A, B in pageable host memory");
    d = g.d, d.a = 0x7f0000000000ull; /* a made-up, aligned address */
    refused(&d, BC_ERR_WRONG_DEVICE, "A at a made-up address");
    free(pa), free(pb);
    /* D in a block smaller than its extent */
    d = g.d, d.d = blk(fx.dev, PM * PN * 4 - 1024);
    refused(&d, BC_ERR_OUT_OF_BOUNDS, "D in a block too small");
    /* a freed block */
    bc_devptr gone = blk(fx.dev, PM * PN * 4);
    CHECK_BC(bc_mem_free(fx.dev, gone));
    d = g.d, d.d = gone;
    refused(&d, BC_ERR_OUT_OF_BOUNDS, "D in a freed block");
    /* bias shorter than N */
    d = g.d, d.bias = blk(fx.dev, PN * 4 / 2);
    refused(&d, BC_ERR_OUT_OF_BOUNDS, "bias of N/2 elements");
    /* C overlapping D shifted by a row; C at D's base with another pitch */
    bc_devptr cd = blk(fx.dev, (PM + 1) * (PN + 64) * 4);
    d = g.d, d.d = cd, d.beta = 1.0f, d.c = cd + PN * 4;
    refused(&d, BC_ERR_OVERLAP, "C = D shifted by a row");
    d = g.d, d.d = cd, d.beta = 1.0f, d.c = cd, d.ldc = PN + 64;
    refused(&d, BC_ERR_OVERLAP, "C at D's base, another pitch");
    /* D == A */
    bc_devptr ad = blk(fx.dev, PM * PN * 4);
    d = g.d, d.a = ad, d.d = ad;
    refused(&d, BC_ERR_OVERLAP, "D == A");
    /* the device still works: the good problem passes, twice */
    CHECK_BC(small_gemm_run(fx.dev, fx.s, &g, NULL, 11));
    CHECK_BC(small_gemm_run(fx.dev, fx.s, &g, NULL, 12));
}

/* A plan and a graph re-pointed at the same bad pointers: each refused, the
 * plan unchanged; then re-pointed at good buffers, both compute correctly. */
static void test_set_pointers_refused(void **state)
{
    SKIP_WITHOUT_GPU();
    small_gemm g = good(), h = good();
    bc_gemm_plan *plan = NULL;
    CHECK_BC(bc_gemm_plan_create(fx.dev, &g.d, &plan));
    const bc_gemm_plan *plans[1] = {plan};
    bc_graph *graph = NULL;
    CHECK_BC(bc_graph_create(fx.s, plans, 1, &graph));
    void *pageable = aligned_alloc(256, PM * PK * 2);
    const struct {
        bc_devptr a, b, d;
        bc_status want;
        const char *what;
    } bad[] = {
        {(bc_devptr)(uintptr_t)pageable, g.d.b, g.d.d, BC_ERR_WRONG_DEVICE, "A pageable"},
        {g.d.a, g.d.b, blk(fx.dev, 4096), BC_ERR_OUT_OF_BOUNDS, "D too small"},
        {g.d.d, g.d.b, g.d.d, BC_ERR_OVERLAP, "D == A"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bc_status st = bc_gemm_plan_set_pointers(plan, bad[i].a, bad[i].b, 0, bad[i].d, 0);
        print_message("  set_pointers %-12s -> %s\n", bad[i].what, bc_status_string(st));
        assert_int_equal(st, bad[i].want);
    }
    free(pageable);
    CHECK_BC(small_gemm_run(fx.dev, fx.s, &g, plan, 21)); /* still g's pointers */
    CHECK_BC(bc_gemm_plan_set_pointers(plan, h.d.a, h.d.b, 0, h.d.d, 0));
    CHECK_BC(bc_graph_update(graph, 0, plan));
    CHECK_BC(small_gemm_run(fx.dev, fx.s, &h, plan, 22));
    bc_graph_destroy(graph);
    bc_gemm_plan_destroy(plan);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* What the checks cost here: plan creation and set_pointers, operands in the
 * arena, in memory the driver describes, in a registered range. */
static void test_check_costs(void **state)
{
    SKIP_WITHOUT_GPU();
    small_gemm g = good();
    bc_devptr fa = blk(fx.other, PM * PK * 2), fb = blk(fx.other, PN * PK * 2), fd = blk(fx.other, PM * PN * 4);
    bc_gemm_plan *plan = NULL;
    CHECK_BC(bc_gemm_plan_create(fx.dev, &g.d, &plan));
    enum { REPS = 2000 };
    const struct {
        const char *what;
        bc_devptr a, b, d;
    } sets[] = {{"arena", g.d.a, g.d.b, g.d.d}, {"driver-described", fa, fb, fd}};
    for (int reg = 0; reg <= 1; reg++)
        for (size_t i = 0; i < 2; i++) {
            if (reg && i == 0)
                continue;
            double t0 = now_us();
            for (int r = 0; r < REPS; r++)
                CHECK_BC(bc_gemm_plan_set_pointers(plan, sets[i].a, sets[i].b, 0, sets[i].d, 0));
            double per = (now_us() - t0) / REPS;
            bc_gemm_plan *p2 = NULL;
            bc_gemm_desc d = g.d;
            d.a = sets[i].a, d.b = sets[i].b, d.d = sets[i].d;
            t0 = now_us();
            for (int r = 0; r < REPS / 10; r++) {
                CHECK_BC(bc_gemm_plan_create(fx.dev, &d, &p2));
                bc_gemm_plan_destroy(p2);
            }
            double create = (now_us() - t0) / (REPS / 10);
            print_message("  check cost, operands %-16s%s: set_pointers %.2f us, plan create+destroy %.2f us\n",
                          sets[i].what, reg ? " (registered)" : "", per, create);
            if (i == 1 && !reg) {
                CHECK_BC(bc_mem_register(fx.dev, fa, PM * PK * 2));
                CHECK_BC(bc_mem_register(fx.dev, fb, PN * PK * 2));
                CHECK_BC(bc_mem_register(fx.dev, fd, PM * PN * 4));
            }
        }
    /* foreign operands compute correctly too */
    small_gemm f = g;
    f.d.a = fa, f.d.b = fb, f.d.d = fd;
    CHECK_BC(bc_gemm_plan_set_pointers(plan, fa, fb, 0, fd, 0));
    CHECK_BC(small_gemm_run(fx.dev, fx.s, &f, plan, 31));
    CHECK_BC(bc_mem_unregister(fx.dev, fa));
    CHECK_BC(bc_mem_unregister(fx.dev, fb));
    CHECK_BC(bc_mem_unregister(fx.dev, fd));
    bc_gemm_plan_destroy(plan);
}

int main(void)
{
    GPU_TEST_PROLOGUE();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_pointers_refused),
        cmocka_unit_test(test_set_pointers_refused),
        cmocka_unit_test(test_check_costs),
    };
    gpu_test_filters();
    return cmocka_run_group_tests_name("gpu_operands", tests, setup, teardown);
}
