/* Graph mode: plans captured once into an instantiated CUDA graph; replay is
 * one cuGraphLaunch and pointer updates patch the instantiated graph in
 * place. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "barecuda/graph.h"
#include "gemm_internal.h"

struct bc_graph {
    bc__link link; /* first: bc_device_close releases graphs through it */
    bc_device *dev;
    CUgraph graph;
    CUgraphExec exec;
    int count;
    CUgraphNode nodes[]; /* nodes[i] runs plans[i] */
};

/* Finds, for each plan, the captured kernel node whose parameter bytes are
 * the plan's (node order from cuGraphGetNodes is not documented). */
static bc_status map_nodes(bc_graph *g, const bc_gemm_plan *const *plans, CUgraphNode *all)
{
    size_t n = (size_t)g->count;
    bc_status st = BC_CU(cuGraphGetNodes, g->graph, all, &n);
    if (st)
        return st;
    if (n != (size_t)g->count)
        return BC_FAIL(BC_ERR_GRAPH, "cuGraphGetNodes", "captured %zu nodes for %d plans", n, g->count);
    for (int i = 0; i < g->count; i++) {
        g->nodes[i] = NULL;
        for (size_t j = 0; j < n && g->nodes[i] == NULL; j++) {
            CUDA_KERNEL_NODE_PARAMS kp;
            if (all[j] == NULL)
                continue;
            st = BC_CU(cuGraphKernelNodeGetParams, all[j], &kp);
            if (st)
                return st;
            if (kp.func == plans[i]->fn && kp.kernelParams != NULL &&
                memcmp(kp.kernelParams[0], &plans[i]->params, sizeof plans[i]->params) == 0) {
                g->nodes[i] = all[j];
                all[j] = NULL; /* each node maps to one plan */
            }
        }
        if (g->nodes[i] == NULL)
            return BC_FAIL(BC_ERR_GRAPH, "cuGraphKernelNodeGetParams", "no captured node matches plan %d", i);
    }
    return BC_OK;
}

/* Stream capture of the launches; the capture is always ended. */
static bc_status capture(bc_stream *s, const bc_gemm_plan *const *plans, int count, CUgraph *out_graph)
{
    bc_status st = BC_CU(cuStreamBeginCapture, s->handle, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (st)
        return st;
    bc_status launch_st = BC_OK;
    for (int i = 0; i < count && !launch_st; i++)
        launch_st = bc_gemm_launch(plans[i], s);
    CUgraph g = NULL;
    st = BC_CU(cuStreamEndCapture, s->handle, &g);
    if (launch_st || st) {
        if (g != NULL)
            BC_CU(cuGraphDestroy, g);
        return launch_st ? launch_st : st;
    }
    *out_graph = g;
    return BC_OK;
}

bc_status bc_graph_create(bc_stream *stream, const bc_gemm_plan *const *plans, int count,
                          bc_graph **out_graph)
{
    if (stream == NULL || plans == NULL || out_graph == NULL || count < 1 || count > 4096)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_graph_create",
                       "stream, plans or out_graph is NULL, or count %d outside [1, 4096]", count);
    for (int i = 0; i < count; i++)
        if (plans[i] == NULL || plans[i]->dev != stream->dev)
            return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "plans", "plan %d is NULL or from another device", i);
    bc_graph *g = calloc(1, sizeof *g + (size_t)count * sizeof(CUgraphNode));
    CUgraphNode *all = calloc((size_t)count, sizeof(CUgraphNode));
    bc_status st = BC_OK;
    if (g == NULL || all == NULL) {
        st = BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "calloc", "cannot allocate a graph of %d plans", count);
        goto fail_free;
    }
    g->dev = stream->dev;
    g->count = count;
    st = capture(stream, plans, count, &g->graph);
    if (st)
        goto fail_free;
    st = map_nodes(g, plans, all);
    if (st)
        goto fail_graph;
    st = BC_CU(cuGraphInstantiateWithFlags, &g->exec, g->graph, 0);
    if (st)
        goto fail_graph;
    free(all);
    bc__list_push(&g->dev->graphs, &g->link);
    *out_graph = g;
    return BC_OK;

fail_graph:
    BC_CU(cuGraphDestroy, g->graph);
fail_free:
    free(all);
    free(g);
    return st;
}

bc_status bc_graph_launch(const bc_graph *graph, bc_stream *stream)
{
    return BC_CU(cuGraphLaunch, graph->exec, stream->handle);
}

bc_status bc_graph_update(bc_graph *graph, int index, const bc_gemm_plan *plan)
{
    if (graph == NULL || plan == NULL || index < 0 || index >= graph->count)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_graph_update", "graph or plan is NULL, or index %d out of range",
                       index);
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    kp.func = plan->fn;
    kp.gridDimX = plan->launch.gridDimX;
    kp.gridDimY = plan->launch.gridDimY;
    kp.gridDimZ = plan->launch.gridDimZ;
    kp.blockDimX = plan->launch.blockDimX;
    kp.blockDimY = plan->launch.blockDimY;
    kp.blockDimZ = plan->launch.blockDimZ;
    kp.sharedMemBytes = plan->launch.sharedMemBytes;
    kp.kernelParams = (void **)plan->args;
    return BC_CU(cuGraphExecKernelNodeSetParams, graph->exec, graph->nodes[index], &kp);
}

void bc_graph_destroy(bc_graph *graph)
{
    if (graph == NULL)
        return;
    BC_CU(cuGraphExecDestroy, graph->exec);
    BC_CU(cuGraphDestroy, graph->graph);
    bc__list_remove(&graph->link);
    free(graph);
}

void bc__graph_release(bc__link *node) { bc_graph_destroy((bc_graph *)node); }
