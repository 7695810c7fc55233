/* Fault-injection sweep (fault_sweep.h) over every driver call that
 * modules, kernels, kernel plans, mixed graphs and user tensor maps make:
 * each fails in turn, once and for good; the scenario reports the failing
 * call with its CUresult and a status of its class, and leaves nothing
 * behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "module_test.h"
#include "fault_sweep.h"

/* The status class each entry's failure belongs to (sticky results are
 * always BC_ERR_DEVICE_LOST). */
static int status_matches(fake_entry e, CUresult r, bc_status st)
{
    int loader = loader_status_matches(e, st);
    if (loader >= 0)
        return loader;
    if (is_sticky(r))
        return st == BC_ERR_DEVICE_LOST;
    switch (e) {
    case FAKE_E_cuModuleLoadDataEx:
        return st == BC_ERR_MODULE_LOAD;
    case FAKE_E_cuFuncSetAttribute: /* the image's limits; a plan's shared memory or cluster size */
        return st == BC_ERR_MODULE_LOAD || st == BC_ERR_LAUNCH_CONFIG || st == BC_ERR_CLUSTER;
    case FAKE_E_cuTensorMapEncodeTiled: /* a user map's refusal; the GEMM's maps report the driver */
    case FAKE_E_cuTensorMapReplaceAddress:
        return st == BC_ERR_TENSOR_MAP || st == BC_ERR_DRIVER;
    default:
        return st == BC_ERR_DRIVER;
    }
}

static void sc_modules_plans_graphs(outcome *o)
{
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
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
    opts.kernels = missing, opts.kernel_count = 2;
    bc_module *m2 = NULL;
    VOID_CALL((void)bc_module_load_file(dev, MT_FATBIN, &opts, &m2)); /* refused: unloads on the way out */
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
    VOID_CALL(bc_graph_destroy(graph));
    bc_kernel_plan_destroy(small);
    VOID_CALL((void)bc_module_unload(m2)); /* NULL, or a module already released */
    VOID_CALL(bc_device_close(dev)); /* big, g and the module are left for close */
}

static void test_sweep_modules(void **state)
{
    /* the scenario reaches every driver entry these objects use */
    static const fake_entry used[] = {
        FAKE_E_cuModuleLoadDataEx,  FAKE_E_cuModuleGetFunction,        FAKE_E_cuModuleUnload,
        FAKE_E_cuFuncGetAttribute,  FAKE_E_cuFuncGetParamInfo,         FAKE_E_cuFuncSetAttribute,
        FAKE_E_cuOccupancyMaxActiveClusters, FAKE_E_cuLaunchKernelEx,  FAKE_E_cuStreamBeginCapture,
        FAKE_E_cuStreamGetCaptureInfo, FAKE_E_cuStreamEndCapture,      FAKE_E_cuGraphInstantiateWithFlags,
        FAKE_E_cuGraphLaunch,       FAKE_E_cuGraphExecKernelNodeSetParams, FAKE_E_cuGraphExecDestroy,
        FAKE_E_cuGraphDestroy,      FAKE_E_cuTensorMapEncodeTiled,     FAKE_E_cuTensorMapReplaceAddress,
    };
    fake_install();
    mt_register_signatures();
    outcome clean = {BC_OK, {0}};
    sc_modules_plans_graphs(&clean);
    assert_int_equal(clean.st, BC_OK);
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
        if (fake_entry_calls(used[i]) == 0)
            fail_msg("the scenario never calls %s", fake_entry_name(used[i]));
    sweep("modules/plans/graphs", sc_modules_plans_graphs, mt_register_signatures, status_matches);
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
    VOID_CALL((void)bc_module_unload(m));
    VOID_CALL(bc_device_close(dev));
}

static void test_sweep_module_unload(void **state)
{
    sweep("module load/unload", sc_module_unload, mt_register_signatures, status_matches);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_sweep_modules),
        ft_test(test_sweep_module_unload),
    };
    return cmocka_run_group_tests_name("module_fault", tests, NULL, sweep_report);
}
