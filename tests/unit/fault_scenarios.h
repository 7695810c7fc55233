/* The fault sweep's scenarios (tests/unit/test_fault.c): one function per
 * path a user takes, and the table of them, `scenarios[]` (a new path is one
 * row). Each runs its steps through STEP, which keeps the first failure and
 * its detail in an `outcome`, and its close/destroy calls through
 * RELEASE_CALL, which marks them during the clean run; test_fault.c defines
 * both, and the recording they use, before it includes this file. */
#ifndef BC_TESTS_FAULT_SCENARIOS_H
#define BC_TESTS_FAULT_SCENARIOS_H

static void open_close(outcome *o, bc_device_config cfg)
{
    bc_device *dev = NULL;
    STEP(o, bc_device_open(&cfg, &dev));
    if (o->st == BC_OK)
        RELEASE_CALL(bc_device_close(dev));
}

static void sc_open_own_arenas(outcome *o) { open_close(o, ft_config()); }

static void sc_open_own_no_arenas(outcome *o)
{
    bc_device_config cfg = ft_config();
    cfg.device_arena_bytes = cfg.host_arena_bytes = 0;
    cfg.sched = BC_SCHED_BLOCK;
    open_close(o, cfg);
}

/* A device that does not take registered host memory at its host address:
 * the host arena comes from cuMemHostAlloc. */
static void alloc_host_arena_config(void)
{
    fake_set_device_attr(0, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 0);
}

static void sc_open_primary_arenas(outcome *o)
{
    bc_device_config cfg = ft_config();
    cfg.use_primary_context = 1;
    open_close(o, cfg);
}

/* The test configuration with the embedded kernels loaded, the optional
 * groups `groups`, and a device arena of `arena` bytes. */
static bc_device_config kernels_config(uint32_t groups, size_t arena)
{
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    cfg.kernel_groups = groups;
    cfg.device_arena_bytes = arena;
    return cfg;
}

/* Open with the embedded kernels loaded (module load, kernel resolution). */
static void sc_open_kernels(outcome *o) { open_close(o, kernels_config(BC_KERNELS_ALL, ft_config().device_arena_bytes)); }

static void sc_driver_queries(outcome *o)
{
    int v = 0, n = 0;
    STEP(o, bc_driver_version(&v));
    STEP(o, bc_device_count(&n));
}

/* Streams, events, memory and copies, released by hand, then close. */
static void sc_stream_event_mem(outcome *o)
{
    bc_device_config cfg = ft_config();
    bc_device *dev = NULL;
    bc_stream *s = NULL, *s2 = NULL, *w = NULL;
    bc_event *e0 = NULL, *e1 = NULL;
    bc_devptr d = 0;
    unsigned char buf[256] = {1, 2, 3};
    float ms = 0;
    STEP(o, bc_device_open(&cfg, &dev));
    if (o->st)
        return;
    STEP(o, bc_stream_create(dev, -1, &s, NULL));
    STEP(o, bc_stream_create(dev, 0, &s2, NULL));
    STEP(o, bc_stream_wrap(dev, bc_stream_handle(s2), &w)); /* asks the driver for the stream's context */
    STEP(o, bc_event_create(dev, &e0));
    STEP(o, bc_event_create(dev, &e1));
    STEP(o, bc_mem_alloc(dev, sizeof buf, &d));
    STEP(o, bc_event_record(e0, s));
    STEP(o, bc_memcpy_htod(dev, d, buf, sizeof buf));
    STEP(o, bc_memset_d8_async(s, d, 9, 16));
    STEP(o, bc_memcpy_dtoh_async(s, buf, d, sizeof buf));
    STEP(o, bc_memcpy_htod_async(s2, d, buf, sizeof buf));
    STEP(o, bc_event_record(e1, s));
    STEP(o, bc_stream_wait(s, 1000000000u));
    STEP(o, bc_stream_query(s2));
    STEP(o, bc_stream_query(w));
    STEP(o, bc_event_elapsed_ms(e0, e1, &ms));
    STEP(o, bc_memcpy_dtoh(dev, buf, d, sizeof buf));
    if (d)
        STEP(o, bc_mem_free(dev, d));
    RELEASE_CALL(bc_event_destroy(e1));
    RELEASE_CALL(bc_stream_destroy(w));
    RELEASE_CALL(bc_stream_destroy(s2));
    RELEASE_CALL(bc_device_close(dev)); /* s and e0 are left for close */
}

/* Two devices, one stream on each, closed in open order. */
static void sc_two_devices(outcome *o)
{
    bc_device_config c0 = ft_config(), c1 = ft_config();
    c1.ordinal = 1;
    c1.use_primary_context = 1;
    bc_device *d0 = NULL, *d1 = NULL;
    bc_stream *s0 = NULL, *s1 = NULL;
    STEP(o, bc_device_open(&c0, &d0));
    STEP(o, bc_device_open(&c1, &d1));
    if (d0)
        STEP(o, bc_device_bind_thread(d0));
    if (d0)
        STEP(o, bc_stream_create(d0, 0, &s0, NULL));
    if (d1)
        STEP(o, bc_device_bind_thread(d1));
    if (d1)
        STEP(o, bc_stream_create(d1, 0, &s1, NULL));
    if (s1)
        STEP(o, bc_stream_wait(s1, 1000000u));
    if (d0)
        RELEASE_CALL(bc_device_close(d0));
    if (d1)
        RELEASE_CALL(bc_device_close(d1));
}

/* A resident executor over two chained plans with an input and an output
 * copy: created, started, stepped, stopped and destroyed by hand, or left
 * running for bc_device_close (`close_running`). */
static void resident(outcome *o, int close_running)
{
    const bc_device_config cfg = kernels_config(BC_KERNELS_ALL, 4u << 20);
    bc_device *dev = NULL;
    bc_stream *s = NULL;
    bc_devptr buf = 0;
    void *host = NULL;
    bc_gemm_plan *p[2] = {NULL, NULL};
    bc_resident *res = NULL;
    STEP(o, bc_device_open(&cfg, &dev));
    if (o->st)
        return;
    STEP(o, bc_stream_create(dev, 0, &s, NULL));
    STEP(o, bc_mem_alloc(dev, 1u << 20, &buf));
    STEP(o, bc_host_alloc(dev, 16384, &host));
    for (int i = 0; i < 2; i++) {
        bc_gemm_desc d;
        bc_gemm_desc_default(&d);
        d.m = d.n = d.k = 64;
        d.a = buf + (i ? 0x20000u : 0), d.b = buf + 0x10000u, d.d = buf + (i ? 0x30000u : 0x20000u);
        d.config = "sm90_64x32";
        STEP(o, bc_gemm_plan_create(dev, &d, &p[i]));
    }
    bc_resident_copy in = {host, buf, 8192}, out = {host ? (char *)host + 8192 : NULL, buf + 0x30000u, 8192};
    bc_resident_config rc;
    bc_resident_config_default(&rc);
    rc.inputs = &in, rc.input_count = 1, rc.outputs = &out, rc.output_count = 1;
    STEP(o, bc_resident_create(dev, (const bc_gemm_plan *const *)p, 2, &rc, &res));
    STEP(o, bc_resident_start(res, s));
    STEP(o, bc_resident_step(res, 5000000000u));
    STEP(o, bc_resident_step(res, 5000000000u));
    if (res && o->st == BC_OK) { /* a step that misses its bound: the stream is asked why */
        fake_set_resident_stall(1);
        const bc_status w = bc_resident_step(res, 1000000u);
        fake_set_resident_stall(0);
        if (w != BC_ERR_TIMEOUT)
            STEP(o, w);
        STEP(o, bc_resident_wait(res, 5000000000u));
    }
    if (!close_running) {
        STEP(o, bc_resident_stop(res, 5000000000u));
        if (res)
            RELEASE_CALL(bc_resident_destroy(res));
    }
    RELEASE_CALL(bc_device_close(dev)); /* the plans (and a running executor) go with it */
}

static void sc_resident(outcome *o) { resident(o, 0); }
static void sc_resident_close_running(outcome *o) { resident(o, 1); }

static void two_devices_config(void)
{
    fake_device d[2];
    fake_device_defaults(&d[0]);
    fake_device_defaults(&d[1]);
    snprintf(d[1].name, sizeof d[1].name, "Fake GH200");
    fake_set_devices(d, 2);
}

/* Two handles on the primary context, kernels loaded: the second's arena is
 * memory the first must ask the driver about. */
static void open_pair(outcome *o, bc_device **a, bc_device **b)
{
    bc_device_config cfg = ft_config();
    cfg.use_primary_context = 1;
    cfg.skip_kernel_load = 0;
    cfg.kernel_groups = BC_KERNELS_ALL;
    STEP(o, bc_device_open(&cfg, a));
    cfg.skip_kernel_load = 1;
    STEP(o, bc_device_open(&cfg, b));
}

/* A 64^3 GEMM's operands, three 8 KiB blocks of dev's arena, and its
 * descriptor over them. */
static bc_gemm_desc small_gemm(outcome *o, bc_device *dev, bc_devptr *a, bc_devptr *b, bc_devptr *d)
{
    STEP(o, bc_mem_alloc(dev, 8192, a));
    STEP(o, bc_mem_alloc(dev, 8192, b));
    STEP(o, bc_mem_alloc(dev, 8192, d));
    bc_gemm_desc g;
    bc_gemm_desc_default(&g);
    g.m = g.n = g.k = 64, g.a = *a, g.b = *b, g.d = *d;
    return g;
}

/* GEMM plans: arena, foreign and registered operands, set_pointers, launch, wait. */
static void sc_plan_launch(outcome *o)
{
    bc_device *dev = NULL, *other = NULL;
    bc_stream *s = NULL;
    bc_devptr a = 0, b = 0, d = 0, fd = 0;
    bc_gemm_plan *p1 = NULL, *p2 = NULL, *p3 = NULL;
    open_pair(o, &dev, &other);
    STEP(o, bc_stream_create(dev, 0, &s, NULL));
    bc_gemm_desc g = small_gemm(o, dev, &a, &b, &d);
    STEP(o, bc_mem_alloc(other, 8192, &fd));
    STEP(o, bc_gemm_plan_create(dev, &g, &p1));
    g.d = fd;
    STEP(o, bc_gemm_plan_create(dev, &g, &p2));
    STEP(o, bc_gemm_launch(p1, s));
    STEP(o, bc_gemm_plan_set_pointers(p1, a, b, 0, fd, 0));
    STEP(o, bc_mem_register(dev, fd, 8192));
    STEP(o, bc_gemm_plan_set_pointers(p2, b, a, 0, fd, 0));
    STEP(o, bc_gemm_launch(p2, s));
    /* A's and B's rows off the 32-byte sectors down 31 k-blocks over 2 x 3 tiles of 128x64: its 2 x 2
     * multicast twin, whose clusters of four a round holds the driver counts (cuOccupancyMaxActiveClusters);
     * A and B one block (read only) */
    bc_devptr ab = 0, d3 = 0;
    STEP(o, bc_mem_alloc(dev, 129u * 1928u * 2u, &ab));
    STEP(o, bc_mem_alloc(dev, 129u * 129u * 2u, &d3));
    bc_gemm_desc g3;
    bc_gemm_desc_default(&g3);
    g3.m = g3.n = 129, g3.k = 1928, g3.a = g3.b = ab, g3.d = d3, g3.config = "sm90_128x64";
    STEP(o, bc_gemm_plan_create(dev, &g3, &p3));
    STEP(o, bc_gemm_launch(p3, s));
    STEP(o, bc_stream_wait(s, 1000000000u));
    bc_gemm_plan_destroy(p3);
    if (fd && dev)
        bc_mem_unregister(dev, fd); /* may never have been registered: no status kept */
    bc_gemm_plan_destroy(p1);
    if (other)
        RELEASE_CALL(bc_device_close(other));
    if (dev)
        RELEASE_CALL(bc_device_close(dev)); /* p2 left for close */
}

/* A stream-K plan (130 x 130 x 4096 on sm90_128x128: 4 tiles over 8 CTAs):
 * its workspace from the arena and its counters zeroed at creation, a
 * launch, a wait, destroyed (the workspace back); a second one left for
 * close. */
static void sc_stream_k(outcome *o)
{
    const bc_device_config cfg = kernels_config(BC_KERNELS_STREAM_K, 8u << 20);
    bc_device *dev = NULL;
    bc_stream *s = NULL;
    bc_devptr a = 0, b = 0, d = 0;
    bc_gemm_plan *p1 = NULL, *p2 = NULL;
    STEP(o, bc_device_open(&cfg, &dev));
    STEP(o, bc_stream_create(dev, 0, &s, NULL));
    STEP(o, bc_mem_alloc(dev, 130u * 4096u * 2u, &a));
    STEP(o, bc_mem_alloc(dev, 130u * 4096u * 2u, &b));
    STEP(o, bc_mem_alloc(dev, 130u * 130u * 2u, &d));
    bc_gemm_desc g;
    bc_gemm_desc_default(&g);
    g.m = g.n = 130, g.k = 4096, g.a = a, g.b = b, g.d = d, g.config = "sm90_128x128", g.stream_k = 1;
    STEP(o, bc_gemm_plan_create(dev, &g, &p1));
    STEP(o, bc_gemm_plan_create(dev, &g, &p2));
    STEP(o, bc_gemm_launch(p1, s));
    STEP(o, bc_stream_wait(s, 1000000000u));
    bc_gemm_plan_destroy(p1);
    if (dev)
        RELEASE_CALL(bc_device_close(dev)); /* p2 left for close */
}

/* Graphs: capture, launch, re-point + update, destroy; one left for close. */
static void sc_graph(outcome *o)
{
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    cfg.kernel_groups = BC_KERNELS_ALL;
    bc_device *dev = NULL;
    bc_stream *s = NULL;
    bc_devptr a = 0, b = 0, d = 0, d2 = 0;
    bc_gemm_plan *p = NULL;
    bc_graph *g1 = NULL, *g2 = NULL;
    STEP(o, bc_device_open(&cfg, &dev));
    STEP(o, bc_stream_create(dev, 0, &s, NULL));
    bc_gemm_desc gd = small_gemm(o, dev, &a, &b, &d);
    STEP(o, bc_mem_alloc(dev, 8192, &d2));
    STEP(o, bc_gemm_plan_create(dev, &gd, &p));
    const bc_gemm_plan *plans[2] = {p, p};
    STEP(o, bc_graph_create(s, plans, 2, &g1));
    STEP(o, bc_graph_create(s, plans, 1, &g2));
    STEP(o, bc_graph_launch(g1, s));
    STEP(o, bc_gemm_plan_set_pointers(p, a, b, 0, d2, 0));
    STEP(o, bc_graph_update(g1, 1, p));
    STEP(o, bc_graph_launch(g1, s));
    STEP(o, bc_stream_wait(s, 1000000000u));
    RELEASE_CALL(bc_graph_destroy(g2));
    if (dev)
        RELEASE_CALL(bc_device_close(dev)); /* g1 and p left for close */
}

/* Captured kernel nodes keep their parameter bytes (graphs match them). */
static void graph_config(void) { fake_set_param_size(sizeof(bc_gemm_params)); }

/* Opens with the kernels and a stream; 0 when a step failed. */
static int open_with_stream(outcome *o, bc_device **dev, bc_stream **s)
{
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    cfg.kernel_groups = BC_KERNELS_ALL;
    STEP(o, bc_device_open(&cfg, dev));
    STEP(o, bc_stream_create(*dev, 0, s, NULL));
    return o->st == BC_OK;
}

/* The boot checks (kernels emulated by smoke_emu.h). */
static void sc_selftests(outcome *o)
{
    bc_device *dev = NULL;
    bc_stream *s = NULL;
    open_with_stream(o, &dev, &s);
    STEP(o, bc_selftest_smoke(dev, s, NULL));
    STEP(o, bc_selftest_gemm(dev, s, NULL));
    STEP(o, bc_selftest_empty_launch(s));
    if (dev)
        RELEASE_CALL(bc_device_close(dev));
}

static void selftest_config(void) { smoke_emu_install(-1); }

/* The bounded close of a device with work: with its helper thread
 * (cuCtxSynchronize), or, when barecuda cannot allocate from then on
 * (`no_heap`), polling the streams it knows. */
static void close_timeout(outcome *o, int no_heap)
{
    bc_device *dev = NULL;
    bc_stream *s = NULL;
    open_with_stream(o, &dev, &s);
    STEP(o, bc_selftest_empty_launch(s));
    const int armed = heap_armed, persistent = heap_persistent;
    const uint64_t at = heap_fail_at;
    if (no_heap)
        heap_armed = 1, heap_fail_at = heap_count + 1, heap_persistent = 1;
    if (dev)
        RELEASE_CALL((void)bc_device_close_timeout(dev, 2000000000u));
    heap_armed = armed, heap_fail_at = at, heap_persistent = persistent;
}

static void sc_close_timeout(outcome *o) { close_timeout(o, 0); }
static void sc_close_timeout_no_heap(outcome *o) { close_timeout(o, 1); }

typedef void (*scenario_fn)(outcome *o);

typedef struct scenario {
    const char *path; /* the user's path it walks */
    const char *name;
    scenario_fn fn;
    void (*config)(void);
} scenario;

/* Modules, kernels, kernel plans, mixed graphs and user tensor maps (the
 * nvcc fixture, tests/fixtures/). */
static void sc_modules_plans_graphs(outcome *o)
{
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    cfg.kernel_groups = BC_KERNELS_ALL;
    bc_device *dev = NULL;
    STEP(o, bc_device_open(&cfg, &dev));
    if (o->st)
        return;
    mt_env e = {.dev = dev};
    bc_kernel *box = NULL;
    bc_kernel_plan *big = NULL, *small = NULL;
    bc_gemm_plan *g = NULL;
    bc_graph *graph = NULL;
    STEP(o, bc_stream_create(dev, 0, &e.s, NULL));
    STEP(o, bc_mem_alloc(dev, 1u << 16, &e.x));
    STEP(o, bc_mem_alloc(dev, 1u << 16, &e.y));
    const char *eager[] = {"fixture_saxpy"}, *missing[] = {"fixture_saxpy", "not_there"};
    bc_module_options opts;
    bc_module_options_default(&opts);
    bc_module *m2 = NULL;
    opts.kernels = eager, opts.kernel_count = 1;
    STEP(o, bc_module_load_file(dev, MT_FATBIN, &opts, &e.mod));
    if (e.mod)
        STEP(o, bc_kernel_get(e.mod, "fixture_saxpy", &e.saxpy));
    if (e.mod)
        STEP(o, bc_kernel_get(e.mod, "fixture_tma_box", &box));
    mt_saxpy v1, v2;
    if (e.saxpy) {
        mt_saxpy_desc(&v1, &e, 4096); /* grid 16 */
        v1.d.dynamic_smem_bytes = 60000, v1.d.cluster[0] = 16, v1.d.programmatic = 1;
        STEP(o, bc_kernel_plan_create(e.saxpy, &v1.d, &big));
        mt_saxpy_desc(&v2, &e, 1000);
        STEP(o, bc_kernel_plan_create(e.saxpy, &v2.d, &small));
    }
    if (big)
        STEP(o, bc_kernel_launch(big, e.s));
    bc_gemm_desc gd;
    bc_gemm_desc_default(&gd);
    gd.m = gd.n = gd.k = 64, gd.a = gd.b = e.x, gd.d = e.y;
    STEP(o, bc_gemm_plan_create(dev, &gd, &g));
    if (g && small && big) {
        const bc_graph_node nodes[3] = {{BC_NODE_GEMM, g, NULL}, {BC_NODE_KERNEL, NULL, small}, {BC_NODE_KERNEL, NULL, big}};
        STEP(o, bc_graph_create_nodes(e.s, nodes, 3, &graph));
    }
    if (graph) {
        STEP(o, bc_graph_launch(graph, e.s));
        float a = 4.0f;
        STEP(o, bc_kernel_plan_set_param(small, 0, &a, 4));
        const bc_graph_node n1 = {BC_NODE_KERNEL, NULL, small};
        STEP(o, bc_graph_update_node(graph, 1, &n1));
    }
    bc_tensor_map_desc td;
    bc_tensor_map_desc_default(&td);
    td.dtype = BC_TMAP_F32, td.rank = 3, td.base = e.x;
    td.dims[0] = 40, td.dims[1] = 9, td.dims[2] = 3;
    td.strides_bytes[0] = 160, td.strides_bytes[1] = 1440;
    td.box[0] = 16, td.box[1] = 4, td.box[2] = 2;
    bc_tensor_map map;
    STEP(o, bc_tensor_map_encode(dev, &td, &map));
    if (o->st == BC_OK)
        STEP(o, bc_tensor_map_set_address(dev, &map, e.y));
    RELEASE_CALL(bc_graph_destroy(graph));
    bc_kernel_plan_destroy(small);
    /* refused (a kernel is missing): it unloads on the way out; its status is not the scenario's, so it
     * counts as a release, and it comes last: a sticky result injected into it loses the process */
    opts.kernels = missing, opts.kernel_count = 2;
    RELEASE_CALL((void)bc_module_load_file(dev, MT_FATBIN, &opts, &m2));
    RELEASE_CALL((void)bc_module_unload(m2)); /* NULL, or a module already released */
    RELEASE_CALL(bc_device_close(dev)); /* big, g and the module are left for close */
}

/* A module loaded and unloaded by hand, eager kernels described. */
static void sc_module_unload(outcome *o)
{
    bc_device_config cfg = ft_config();
    bc_device *dev = NULL;
    STEP(o, bc_device_open(&cfg, &dev));
    if (o->st)
        return;
    bc_module_options opts;
    bc_module_options_default(&opts);
    const char *eager[] = {"fixture_tma_box", "fixture_saxpy"};
    opts.kernels = eager, opts.kernel_count = 2;
    bc_module *m = NULL;
    STEP(o, bc_module_load_file(dev, MT_FIX "user_kernels_sm90a.cubin", &opts, &m));
    RELEASE_CALL((void)bc_module_unload(m));
    RELEASE_CALL(bc_device_close(dev));
}

/* One row per path. */
static const scenario scenarios[] = {
    {"open", "open own+arenas", sc_open_own_arenas, NULL},
    {"open", "open own, no arenas", sc_open_own_no_arenas, NULL},
    {"open", "open primary+arenas", sc_open_primary_arenas, NULL},
    {"open", "open, host arena allocated", sc_open_own_arenas, alloc_host_arena_config},
    {"open", "open with kernels", sc_open_kernels, NULL},
    {"open", "driver queries", sc_driver_queries, NULL},
    {"wait", "stream/event/mem", sc_stream_event_mem, NULL},
    {"open", "two devices", sc_two_devices, two_devices_config},
    {"plan", "plan/launch/operands", sc_plan_launch, NULL},
    {"graph", "graph", sc_graph, graph_config},
    {"plan", "stream-K plan", sc_stream_k, graph_config},
    {"launch", "boot checks", sc_selftests, selftest_config},
    {"close", "bounded close", sc_close_timeout, NULL},
    {"close", "bounded close, no heap", sc_close_timeout_no_heap, NULL},
    {"resident", "resident executor", sc_resident, NULL},
    {"resident", "resident, close running", sc_resident_close_running, NULL},
    {"module", "modules/plans/graphs", sc_modules_plans_graphs, mt_register_signatures},
    {"module", "module load/unload", sc_module_unload, mt_register_signatures},
};
#define SCENARIOS (sizeof scenarios / sizeof scenarios[0])

#endif
