/* Mixed graphs on the fake driver: GEMM plans and kernel plans captured in
 * order, programmatic serialization kept on the nodes whose plans ask for
 * it, in-place updates from compatible plans only (every difference named),
 * modules pinned while a graph uses them, and failures that keep the first
 * error (clean-up calls never overwrite it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gemm_abi.h"
#include "module_test.h"

typedef struct genv {
    mt_env m;
    bc_gemm_plan *g1, *g2;
    mt_saxpy v1, v2;
    bc_kernel_plan *k1, *k2; /* k2 is programmatic */
    bc_graph *graph;
} genv;

static bc_gemm_plan *gemm(mt_env *e, int64_t m, int64_t n, int64_t k)
{
    bc_gemm_desc d;
    bc_gemm_desc_default(&d);
    d.m = m, d.n = n, d.k = k;
    d.a = d.b = e->x, d.d = e->y;
    bc_gemm_plan *p = NULL;
    assert_ok(bc_gemm_plan_create(e->dev, &d, &p));
    return p;
}

/* Two fake devices, a on the first and b on the second (gemm: with the
 * GEMM kernels loaded). */
static void open_two(mt_env *a, mt_env *b, int gemm_kernels)
{
    fake_device d[2];
    fake_device_defaults(&d[0]);
    fake_device_defaults(&d[1]);
    fake_set_devices(d, 2);
    mt_open(a, gemm_kernels);
    mt_open(b, gemm_kernels);
}

/* [GEMM, saxpy, saxpy (programmatic), GEMM] */
static void genv_open(genv *g)
{
    memset(g, 0, sizeof *g);
    mt_open(&g->m, 1);
    fake_set_param_size(sizeof(bc_gemm_params));
    g->g1 = gemm(&g->m, 64, 64, 64);
    g->g2 = gemm(&g->m, 40, 64, 128); /* past 32 rows: the tiles (fewer, the GEMV kernel's twin) */
    mt_saxpy_desc(&g->v1, &g->m, 1000);
    mt_saxpy_desc(&g->v2, &g->m, 1000);
    g->v2.d.programmatic = 1;
    assert_ok(bc_kernel_plan_create(g->m.saxpy, &g->v1.d, &g->k1));
    assert_ok(bc_kernel_plan_create(g->m.saxpy, &g->v2.d, &g->k2));
    const bc_graph_node nodes[4] = {
        {BC_NODE_GEMM, g->g1, NULL}, {BC_NODE_KERNEL, NULL, g->k1}, {BC_NODE_KERNEL, NULL, g->k2}, {BC_NODE_GEMM, g->g2, NULL}};
    assert_ok(bc_graph_create_nodes(g->m.s, nodes, 4, &g->graph));
}

static int programmatic(const fake_kernel_node *n)
{
    for (unsigned i = 0; i < n->num_attrs; i++)
        if (n->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
            return n->attrs[i].value.programmaticStreamSerializationAllowed;
    return 0;
}

static void test_capture_in_order(void **state)
{
    (void)state;
    genv g;
    genv_open(&g);
    static const char *const names[4] = {"bc_gemm_sm90_64x32t", "fixture_saxpy", "fixture_saxpy", "bc_gemm_sm90_64x32t"};
    static const int prog[4] = {1, 0, 1, 1};
    for (int i = 0; i < 4; i++) {
        const fake_kernel_node *n = fake_last_capture_node(i);
        assert_non_null(n);
        assert_string_equal(n->kernel, names[i]);
        assert_int_equal(programmatic(n), prog[i]);
    }
    assert_null(fake_last_capture_node(4));
    /* the kernel nodes hold the plans' parameter blocks */
    const fake_kernel_node *n1 = fake_last_capture_node(1);
    assert_int_equal(n1->param_bytes, 28);
    assert_int_equal(memcmp(n1->params + 8, &g.m.x, 8), 0);
    assert_ok(bc_graph_launch(g.graph, g.m.s));
    assert_int_equal(fake_graph_launches(), 1);
    assert_int_equal(fake_graph_kernels_run(), 4);
    assert_int_equal(fake_launches(), 0); /* nothing ran outside the graph */
    bc_device_close(g.m.dev);
}

static void expect_incompatible(genv *g, int index, const bc_graph_node *n, const char *needle)
{
    uint64_t updates = fake_exec_updates();
    assert_status(bc_graph_update_node(g->graph, index, n), BC_ERR_GRAPH);
    mt_assert_failed(BC_ERR_GRAPH, "bc_graph_update_node", needle);
    assert_int_equal(fake_exec_updates(), updates);
}

static void test_update_in_place(void **state)
{
    (void)state;
    genv g;
    genv_open(&g);
    /* a new value in the captured plan */
    float a = -7.0f;
    assert_ok(bc_kernel_plan_set_param(g.k1, 0, &a, 4));
    const bc_graph_node n1 = {BC_NODE_KERNEL, NULL, g.k1};
    assert_ok(bc_graph_update_node(g.graph, 1, &n1));
    const fake_kernel_node *u = fake_last_exec_update();
    assert_int_equal(u->param_bytes, 28);
    assert_int_equal(memcmp(u->params, &a, 4), 0);
    assert_string_equal(fake_function_name(u->func), "fixture_saxpy");
    assert_int_equal(u->grid[0], 4);
    /* another plan with the same launch: accepted for node 1, refused for node 2 (programmatic) */
    mt_saxpy v;
    mt_saxpy_desc(&v, &g.m, 1000);
    v.n = 999;
    bc_kernel_plan *other = NULL;
    assert_ok(bc_kernel_plan_create(g.m.saxpy, &v.d, &other));
    const bc_graph_node no = {BC_NODE_KERNEL, NULL, other};
    assert_ok(bc_graph_update_node(g.graph, 1, &no));
    expect_incompatible(&g, 2, &no, "programmatic serialization differs");
    /* each other difference, named */
    bc_kernel_plan *p = NULL;
    mt_saxpy_desc(&v, &g.m, 2000);
    assert_ok(bc_kernel_plan_create(g.m.saxpy, &v.d, &p));
    const bc_graph_node np = {BC_NODE_KERNEL, NULL, p};
    expect_incompatible(&g, 1, &np, "grid differs");
    mt_saxpy_desc(&v, &g.m, 1000);
    v.d.block[0] = 128, v.d.grid[0] = 4;
    assert_ok(bc_kernel_plan_create(g.m.saxpy, &v.d, &p));
    const bc_graph_node nb = {BC_NODE_KERNEL, NULL, p};
    expect_incompatible(&g, 1, &nb, "block differs");
    mt_saxpy_desc(&v, &g.m, 1000);
    v.d.dynamic_smem_bytes = 1024;
    assert_ok(bc_kernel_plan_create(g.m.saxpy, &v.d, &p));
    const bc_graph_node ns = {BC_NODE_KERNEL, NULL, p};
    expect_incompatible(&g, 1, &ns, "dynamic shared memory differs");
    mt_saxpy_desc(&v, &g.m, 1000);
    v.d.cluster[0] = 2;
    assert_ok(bc_kernel_plan_create(g.m.saxpy, &v.d, &p));
    const bc_graph_node nc = {BC_NODE_KERNEL, NULL, p};
    expect_incompatible(&g, 1, &nc, "cluster differs");
    /* a different kernel, a GEMM plan for a kernel node, a kernel plan for a GEMM node */
    bc_kernel *box = NULL;
    assert_ok(bc_kernel_get(g.m.mod, "fixture_tma_box", &box));
    uint8_t map[128] = {0};
    int32_t cols = 16;
    bc_kernel_param bp[4] = {{map, 128, 0}, {&g.m.x, 8, 0}, {&cols, 4, 0}, {&cols, 4, 0}};
    bc_kernel_plan_desc bd = {.grid = {4, 1, 1}, .block = {256, 1, 1}, .params = bp, .param_count = 4};
    assert_ok(bc_kernel_plan_create(box, &bd, &p));
    const bc_graph_node nk = {BC_NODE_KERNEL, NULL, p};
    expect_incompatible(&g, 1, &nk, "kernel differs from the captured node's (fixture_tma_box, captured fixture_saxpy)");
    const bc_graph_node ng = {BC_NODE_GEMM, g.g1, NULL};
    expect_incompatible(&g, 1, &ng, "captured a kernel plan; given a GEMM plan");
    expect_incompatible(&g, 0, &n1, "captured a GEMM plan; given a kernel plan");
    /* GEMM nodes: a plan of another shape is refused too (bc_graph_update checks now) */
    bc_gemm_plan *big = gemm(&g.m, 256, 256, 64);
    uint64_t updates = fake_exec_updates();
    assert_status(bc_graph_update(g.graph, 0, big), BC_ERR_GRAPH);
    assert_int_equal(fake_exec_updates(), updates);
    assert_ok(bc_graph_update(g.graph, 0, g.g1));
    assert_ok(bc_gemm_plan_set_pointers(g.g2, g.m.y, g.m.y, 0, g.m.x, 0));
    assert_ok(bc_graph_update(g.graph, 3, g.g2));
    /* bad arguments */
    assert_status(bc_graph_update_node(g.graph, 4, &n1), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_graph_update_node(g.graph, -1, &n1), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_graph_update_node(NULL, 1, &n1), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_graph_update(g.graph, 0, NULL), BC_ERR_INVALID_ARGUMENT);
    const bc_graph_node both = {BC_NODE_KERNEL, g.g1, g.k1};
    assert_status(bc_graph_update_node(g.graph, 1, &both), BC_ERR_INVALID_ARGUMENT);
    assert_ok(bc_graph_launch(g.graph, g.m.s));
    bc_device_close(g.m.dev);
}

static void test_module_pinned_by_graph(void **state)
{
    (void)state;
    genv g;
    genv_open(&g);
    bc_kernel_plan_destroy(g.k1);
    bc_kernel_plan_destroy(g.k2);
    assert_status(bc_module_unload(g.m.mod), BC_ERR_IN_USE);
    mt_assert_failed(BC_ERR_IN_USE, "bc_module_unload", "2 kernel plan(s) or graph node(s)");
    assert_ok(bc_graph_launch(g.graph, g.m.s)); /* the graph runs what it captured */
    bc_graph_destroy(g.graph);
    bc_graph_destroy(NULL);
    assert_ok(bc_module_unload(g.m.mod));
    bc_device_close(g.m.dev);
}

static void test_create_arguments(void **state)
{
    (void)state;
    genv g;
    genv_open(&g);
    bc_graph *out = (bc_graph *)(uintptr_t)0x99;
    const bc_graph_node bad_kind[1] = {{BC_NODE_KERNEL, g.g1, NULL}};
    assert_status(bc_graph_create_nodes(g.m.s, bad_kind, 1, &out), BC_ERR_INVALID_ARGUMENT);
    mt_assert_failed(BC_ERR_INVALID_ARGUMENT, "nodes", "node 0");
    const bc_graph_node ok[1] = {{BC_NODE_KERNEL, NULL, g.k1}};
    assert_status(bc_graph_create_nodes(g.m.s, ok, 0, &out), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_graph_create_nodes(g.m.s, ok, 4097, &out), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_graph_create_nodes(NULL, ok, 1, &out), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_graph_create_nodes(g.m.s, NULL, 1, &out), BC_ERR_INVALID_ARGUMENT);
    const bc_gemm_plan *none[1] = {NULL};
    assert_status(bc_graph_create(g.m.s, none, 1, &out), BC_ERR_INVALID_ARGUMENT);
    assert_ptr_equal(out, (bc_graph *)(uintptr_t)0x99);
    /* a plan of another device */
    bc_device_close(g.m.dev);
    mt_env a, b;
    open_two(&a, &b, 0);
    mt_saxpy v;
    bc_kernel_plan *pb = mt_saxpy_plan(&b, &v, 100);
    const bc_graph_node foreign[1] = {{BC_NODE_KERNEL, NULL, pb}};
    assert_status(bc_device_bind_thread(a.dev), BC_OK);
    assert_status(bc_graph_create_nodes(a.s, foreign, 1, &out), BC_ERR_INVALID_ARGUMENT);
    mt_assert_failed(BC_ERR_INVALID_ARGUMENT, "nodes", "another device");
    bc_device_close(a.dev);
    bc_device_close(b.dev);
}

/* Failures while capturing or instantiating report the failing call, not
 * the clean-up's; bc_graph_destroy leaves bc_last_error() alone. */
static void test_failures_keep_the_first_error(void **state)
{
    (void)state;
    genv g;
    genv_open(&g);
    const bc_graph_node nodes[2] = {{BC_NODE_KERNEL, NULL, g.k1}, {BC_NODE_GEMM, g.g1, NULL}};
    bc_graph *out = NULL;
    /* the second launch fails once: the capture is ended and dropped, nothing is left */
    fake_fail_entry(FAKE_E_cuLaunchKernelEx, 2, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 0);
    int live = fake_live_objects();
    assert_status(bc_graph_create_nodes(g.m.s, nodes, 2, &out), BC_ERR_DRIVER);
    ft_assert_last(BC_ERR_DRIVER, "cuLaunchKernelEx", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    assert_int_equal(fake_live_objects(), live);
    assert_null(out);
    fake_fail_clear();
    assert_ok(bc_graph_create_nodes(g.m.s, nodes, 2, &out)); /* usable again */
    bc_graph_destroy(out);
    /* instantiation fails and so does every call after it (the graph's destroy) */
    uint64_t base = fake_calls();
    assert_ok(bc_graph_create_nodes(g.m.s, nodes, 2, &out));
    uint64_t per_create = fake_calls() - base;
    bc_graph_destroy(out);
    fake_fail_call(per_create, CUDA_ERROR_OUT_OF_MEMORY, 1); /* the last call of a create: instantiate */
    assert_status(bc_graph_create_nodes(g.m.s, nodes, 2, &out), BC_ERR_DRIVER);
    fake_fail_clear();
    ft_assert_last(BC_ERR_DRIVER, "cuGraphInstantiateWithFlags", CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(fake_live_objects(), live);
    /* the capture's end fails after good launches: that is the failure reported */
    fake_fail_entry(FAKE_E_cuStreamEndCapture, 1, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, 0);
    assert_status(bc_graph_create_nodes(g.m.s, nodes, 2, &out), BC_ERR_DRIVER);
    ft_assert_last(BC_ERR_DRIVER, "cuStreamEndCapture", CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    fake_fail_clear();
    /* (the fake's injected failure left the stream capturing; a new stream is clean) */
    bc_stream_destroy(g.m.s);
    assert_ok(bc_stream_create(g.m.dev, 0, &g.m.s, NULL));
    /* destroy: its failing calls are logged, the last error stays */
    assert_ok(bc_graph_create_nodes(g.m.s, nodes, 2, &out));
    bc_module *junk = NULL;
    assert_status(bc_module_load(g.m.dev, "junk", 4, NULL, &junk), BC_ERR_FATBIN_CORRUPT);
    bc_error_detail before, after;
    bc_last_error(&before);
    uint64_t injected = fake_injected();
    fake_fail_call(1, CUDA_ERROR_UNKNOWN, 1);
    bc_graph_destroy(out);
    fake_fail_clear();
    bc_last_error(&after);
    assert_int_equal(after.status, BC_ERR_FATBIN_CORRUPT);
    assert_string_equal(after.message, before.message);
    assert_int_equal(fake_injected() - injected, 2); /* exec and graph destroy both failed, both released */
    bc_device_close(g.m.dev);
}

/* A GEMM and a saxpy plan on e's device and a graph of the two on its
 * stream (GEMM plans need the fake's parameter size set). */
typedef struct pair {
    bc_gemm_plan *g;
    mt_saxpy v;
    bc_kernel_plan *k;
    bc_graph_node nodes[2];
    bc_graph *graph;
} pair;

static void pair_open(mt_env *e, pair *p)
{
    fake_set_param_size(sizeof(bc_gemm_params));
    p->g = gemm(e, 64, 64, 64);
    p->k = mt_saxpy_plan(e, &p->v, 100);
    p->nodes[0] = (bc_graph_node){BC_NODE_GEMM, p->g, NULL};
    p->nodes[1] = (bc_graph_node){BC_NODE_KERNEL, NULL, p->k};
    p->graph = NULL;
    assert_ok(bc_graph_create_nodes(e->s, p->nodes, 2, &p->graph));
}

/* A plan, graph or event of one device meets a stream of another: every
 * launch call and the record refuse it by name, before any driver call,
 * and so do the boot checks given another device's stream. */
static void test_streams_of_another_device(void **state)
{
    (void)state;
    mt_env a, b;
    open_two(&a, &b, 1);
    assert_ok(bc_device_bind_thread(a.dev));
    pair pa;
    pair_open(&a, &pa);
    bc_gemm_plan *ga = pa.g;
    bc_kernel_plan *ka = pa.k;
    bc_graph *gr = pa.graph;
    bc_event *ev = NULL, *evb = NULL;
    assert_ok(bc_event_create(a.dev, &ev));
    assert_ok(bc_event_create(b.dev, &evb));
    const uint64_t calls = fake_calls();
    assert_status(bc_gemm_launch(ga, b.s), BC_ERR_INVALID_ARGUMENT);
    mt_assert_failed(BC_ERR_INVALID_ARGUMENT, "stream", "another device than the plan");
    assert_status(bc_kernel_launch(ka, b.s), BC_ERR_INVALID_ARGUMENT);
    mt_assert_failed(BC_ERR_INVALID_ARGUMENT, "stream", "another device than the plan");
    assert_status(bc_graph_launch(gr, b.s), BC_ERR_INVALID_ARGUMENT);
    mt_assert_failed(BC_ERR_INVALID_ARGUMENT, "stream", "another device than the graph");
    assert_status(bc_event_record(ev, b.s), BC_ERR_INVALID_ARGUMENT);
    mt_assert_failed(BC_ERR_INVALID_ARGUMENT, "stream", "another device than the event");
    float ms = -1.0f;
    assert_status(bc_event_elapsed_ms(ev, evb, &ms), BC_ERR_INVALID_ARGUMENT);
    mt_assert_failed(BC_ERR_INVALID_ARGUMENT, "end", "two devices");
    assert_true(ms == -1.0f);
    assert_status(bc_selftest_smoke(a.dev, b.s, NULL), BC_ERR_INVALID_ARGUMENT);
    mt_assert_failed(BC_ERR_INVALID_ARGUMENT, "stream", "another device");
    assert_status(bc_selftest_gemm(a.dev, b.s, NULL), BC_ERR_INVALID_ARGUMENT);
    mt_assert_failed(BC_ERR_INVALID_ARGUMENT, "stream", "another device");
    assert_int_equal(fake_calls(), calls);
    /* each on its own device's stream: queued */
    assert_ok(bc_gemm_launch(ga, a.s));
    assert_ok(bc_kernel_launch(ka, a.s));
    assert_ok(bc_graph_launch(gr, a.s));
    assert_ok(bc_event_record(ev, a.s));
    bc_event_destroy(ev);
    bc_event_destroy(evb);
    bc_graph_destroy(gr);
    bc_device_close(a.dev);
    bc_device_close(b.dev);
}

/* After the process lost its GPU (a sticky fault seen by a wait), the
 * kernel, module, tensor-map and graph calls that plan or build fail at
 * once with BC_ERR_DEVICE_LOST, asking no driver, as the GEMM plan calls
 * do; a launch is one driver call, which the driver refuses. */
static void test_lost_device_refuses_planning(void **state)
{
    (void)state;
    mt_env e;
    mt_open(&e, 1);
    pair pr;
    pair_open(&e, &pr);
    const mt_saxpy v = pr.v;
    bc_kernel_plan *k = pr.k;
    const bc_graph_node *nodes = pr.nodes;
    bc_graph *gr = pr.graph;
    fake_fault_next_launch(CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_ok(bc_kernel_launch(k, e.s)); /* queued: the fault comes later */
    assert_status(bc_stream_wait(e.s, 1000000000u), BC_ERR_DEVICE_LOST);
    const uint64_t calls = fake_calls();
    bc_kernel *kern = NULL;
    bc_kernel_plan *k2 = NULL;
    bc_graph *gr2 = NULL;
    assert_status(bc_kernel_get(e.mod, "fixture_saxpy", &kern), BC_ERR_DEVICE_LOST);
    assert_status(bc_kernel_plan_create(e.saxpy, &v.d, &k2), BC_ERR_DEVICE_LOST);
    const int32_t n = 50;
    assert_status(bc_kernel_plan_set_param(k, 3, &n, sizeof n), BC_ERR_DEVICE_LOST);
    assert_status(bc_graph_create_nodes(e.s, nodes, 2, &gr2), BC_ERR_DEVICE_LOST);
    assert_status(bc_graph_update_node(gr, 1, &nodes[1]), BC_ERR_DEVICE_LOST);
    bc_module *mod2 = NULL;
    assert_status(bc_module_load_file(e.dev, MT_FATBIN, NULL, &mod2), BC_ERR_DEVICE_LOST);
    bc_tensor_map_desc td;
    assert_ok(bc_tensor_map_desc_default(&td));
    td.dtype = BC_TMAP_F32, td.rank = 2, td.base = e.x;
    td.dims[0] = 64, td.dims[1] = 64, td.strides_bytes[0] = 256;
    td.box[0] = 16, td.box[1] = 16;
    bc_tensor_map tm;
    assert_status(bc_tensor_map_encode(e.dev, &td, &tm), BC_ERR_DEVICE_LOST);
    assert_int_equal(fake_calls(), calls); /* none of these asked the driver */
    assert_null(mod2);
    assert_null(kern);
    assert_null(k2);
    assert_null(gr2);
    assert_status(bc_kernel_launch(k, e.s), BC_ERR_DEVICE_LOST); /* the driver's refusal */
    bc_graph_destroy(gr);
    bc_device_close(e.dev);
    bc__driver_release(); /* test cleanup: a lost process */
    fake_reset();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_capture_in_order),       ft_test(test_update_in_place),
        ft_test(test_module_pinned_by_graph), ft_test(test_create_arguments),
        ft_test(test_failures_keep_the_first_error), ft_test(test_streams_of_another_device),
        ft_test(test_lost_device_refuses_planning), /* last: it leaves the process lost until its cleanup */
    };
    return cmocka_run_group_tests_name("graph_nodes", tests, NULL, NULL);
}
