/* Graph mode: an ordered sequence of GEMM plans and kernel plans captured
 * once into an instantiated CUDA graph (graph.h). A replay is one
 * cuGraphLaunch; a node's parameters are patched in place, and only from a
 * plan whose launch is the captured one (same kernel, grid, block, cluster,
 * dynamic shared memory and programmatic setting), since an instantiated
 * node cannot change the rest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "barecuda/graph.h"
#include "error.h"
#include "gemm_internal.h"
#include "module_internal.h"

#define MAX_NODES 4096

/* What a launch fixes, apart from its parameter values. */
typedef struct launch_sig {
    CUfunction fn;
    uint32_t grid[3], block[3], cluster[3];
    uint32_t smem;
    int programmatic;
} launch_sig;

/* One node's plan, seen uniformly. */
typedef struct launch_view {
    bc_device *dev;
    const CUlaunchConfig *lc;
    CUfunction fn;
    void **args;
    bc_module *mod;   /* kernel plans: the module that must stay loaded */
    const char *name; /* kernel or GEMM configuration, for messages */
    const bc_graph_node *src;
} launch_view;

typedef struct gnode {
    CUgraphNode node;
    bc_graph_node_kind kind;
    bc_module *mod;
    launch_sig sig;
    const char *name;
} gnode;

struct bc_graph {
    bc__link link; /* first: bc_device_close releases graphs through it */
    bc_device *dev;
    CUgraph graph;
    CUgraphExec exec;
    int count;
    gnode nodes[];
};

static bc_status view_of(const bc_graph_node *n, int index, launch_view *v)
{
    if (n->kind == BC_NODE_GEMM && n->gemm != NULL && n->kernel == NULL) {
        const bc_gemm_plan *p = n->gemm;
        *v = (launch_view){p->dev, &p->launch, p->fn, (void **)p->args, NULL, p->config->name, n};
        return BC_OK;
    }
    if (n->kind == BC_NODE_KERNEL && n->kernel != NULL && n->gemm == NULL) {
        const bc_kernel_plan *p = n->kernel;
        *v = (launch_view){p->dev, &p->launch, p->kernel->fn, (void **)p->args, p->kernel->mod, p->kernel->name,
                           n};
        return BC_OK;
    }
    return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "nodes",
                   "node %d: kind %d needs exactly its own plan pointer (gemm for GEMM, kernel for KERNEL)", index,
                   (int)n->kind);
}

static launch_sig sig_of(const launch_view *v)
{
    const CUlaunchConfig *lc = v->lc;
    launch_sig s = {v->fn, {lc->gridDimX, lc->gridDimY, lc->gridDimZ}, {lc->blockDimX, lc->blockDimY, lc->blockDimZ},
                    {1, 1, 1}, lc->sharedMemBytes, 0};
    for (unsigned i = 0; i < lc->numAttrs; i++) {
        const CUlaunchAttribute *a = &lc->attrs[i];
        if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            s.cluster[0] = a->value.clusterDim.x;
            s.cluster[1] = a->value.clusterDim.y;
            s.cluster[2] = a->value.clusterDim.z;
        } else if (a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) {
            s.programmatic = a->value.programmaticStreamSerializationAllowed != 0;
        }
    }
    return s;
}

static int dims_differ(const uint32_t a[3], const uint32_t b[3]) { return memcmp(a, b, 3 * sizeof a[0]) != 0; }

/* BC_ERR_GRAPH naming the first difference between the captured launch and
 * the plan's. */
static bc_status check_compatible(const gnode *g, int index, const launch_view *v)
{
    const launch_sig s = sig_of(v), *c = &g->sig;
    const char *what = NULL;
    char detail[160] = "";
    if (s.fn != c->fn) {
        what = "kernel";
        snprintf(detail, sizeof detail, "%s, captured %s", v->name, g->name);
    } else if (dims_differ(s.grid, c->grid)) {
        what = "grid";
        snprintf(detail, sizeof detail, "{%u, %u, %u}, captured {%u, %u, %u}", s.grid[0], s.grid[1], s.grid[2],
                 c->grid[0], c->grid[1], c->grid[2]);
    } else if (dims_differ(s.block, c->block)) {
        what = "block";
        snprintf(detail, sizeof detail, "{%u, %u, %u}, captured {%u, %u, %u}", s.block[0], s.block[1], s.block[2],
                 c->block[0], c->block[1], c->block[2]);
    } else if (dims_differ(s.cluster, c->cluster)) {
        what = "cluster";
        snprintf(detail, sizeof detail, "{%u, %u, %u}, captured {%u, %u, %u}", s.cluster[0], s.cluster[1],
                 s.cluster[2], c->cluster[0], c->cluster[1], c->cluster[2]);
    } else if (s.smem != c->smem) {
        what = "dynamic shared memory";
        snprintf(detail, sizeof detail, "%u bytes, captured %u", s.smem, c->smem);
    } else if (s.programmatic != c->programmatic) {
        what = "programmatic serialization";
        snprintf(detail, sizeof detail, "%s, captured %s", s.programmatic ? "on" : "off",
                 c->programmatic ? "on" : "off");
    }
    if (what == NULL)
        return BC_OK;
    return BC_FAIL(BC_ERR_GRAPH, "bc_graph_update_node",
                   "node %d: the plan's %s differs from the captured node's (%s): capture a new graph", index, what,
                   detail);
}

/* Launches every node into the capturing stream and records, after each,
 * the node the capture just added (the stream's single dependency). */
static bc_status capture_nodes(bc_stream *s, const launch_view *v, bc_graph *g)
{
    for (int i = 0; i < g->count; i++) {
        const bc_graph_node *n = v[i].src;
        bc_status st = n->kind == BC_NODE_GEMM ? bc_gemm_launch(n->gemm, s) : bc_kernel_launch(n->kernel, s);
        if (st)
            return st;
        CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
        const CUgraphNode *deps = NULL;
        size_t ndeps = 0;
        st = BC_CU(cuStreamGetCaptureInfo, s->handle, &cs, NULL, NULL, &deps, &ndeps);
        if (st)
            return st;
        if (cs != CU_STREAM_CAPTURE_STATUS_ACTIVE || ndeps != 1 || deps == NULL || deps[0] == NULL)
            return BC_FAIL(BC_ERR_GRAPH, "cuStreamGetCaptureInfo",
                           "node %d: the capture is not active or did not end on one node (status %d, %zu "
                           "dependencies)", i, (int)cs, ndeps);
        g->nodes[i].node = deps[0];
    }
    return BC_OK;
}

/* Begin, launch, end: the capture is always ended; on failure the first
 * failure stays the reported one and nothing is left behind. */
static bc_status capture(bc_stream *s, const launch_view *v, bc_graph *g)
{
    bc_status st = BC_CU(cuStreamBeginCapture, s->handle, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (st)
        return st;
    st = capture_nodes(s, v, g);
    CUgraph cg = NULL;
    if (st) {
        if (BC_CU_CLEANUP(cuStreamEndCapture, s->handle, &cg) == BC_OK && cg != NULL)
            BC_CU_CLEANUP(cuGraphDestroy, cg);
        return st;
    }
    st = BC_CU(cuStreamEndCapture, s->handle, &cg);
    if (st) {
        if (cg != NULL)
            BC_CU_CLEANUP(cuGraphDestroy, cg);
        return st;
    }
    g->graph = cg;
    return BC_OK;
}

static bc_status check_nodes(const bc_stream *stream, const bc_graph_node *nodes, int count, launch_view *v)
{
    for (int i = 0; i < count; i++) {
        bc_status st = view_of(&nodes[i], i, &v[i]);
        if (st)
            return st;
        if (v[i].dev != stream->dev)
            return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "nodes", "node %d: the plan belongs to another device", i);
    }
    return BC_OK;
}

bc_status bc_graph_create_nodes(bc_stream *stream, const bc_graph_node *nodes, int count, bc_graph **out_graph)
{
    if (stream == NULL || nodes == NULL || out_graph == NULL || count < 1 || count > MAX_NODES)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_graph_create_nodes",
                       "stream, nodes or out_graph is NULL, or count %d outside [1, %d]", count, MAX_NODES);
    if (bc__dev_lost(stream->dev))
        return BC_LOST_FAIL("bc_graph_create_nodes");
    launch_view *v = calloc((size_t)count, sizeof *v);
    bc_graph *g = calloc(1, sizeof *g + (size_t)count * sizeof(gnode));
    bc_status st = BC_OK;
    if (v == NULL || g == NULL) {
        st = BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "calloc", "cannot allocate a graph of %d nodes", count);
        goto fail_free;
    }
    st = check_nodes(stream, nodes, count, v);
    if (st)
        goto fail_free;
    g->dev = stream->dev;
    g->count = count;
    st = capture(stream, v, g);
    if (st)
        goto fail_free;
    st = BC_CU(cuGraphInstantiateWithFlags, &g->exec, g->graph, 0);
    if (st)
        goto fail_graph;
    for (int i = 0; i < count; i++) {
        gnode *n = &g->nodes[i];
        n->kind = nodes[i].kind;
        n->mod = v[i].mod;
        n->sig = sig_of(&v[i]);
        n->name = v[i].name;
        if (n->mod)
            n->mod->uses++;
    }
    free(v);
    bc__list_push(&g->dev->graphs, &g->link);
    *out_graph = g;
    return BC_OK;

fail_graph:
    BC_CU_CLEANUP(cuGraphDestroy, g->graph);
fail_free:
    free(v);
    free(g);
    return st;
}

bc_status bc_graph_create(bc_stream *stream, const bc_gemm_plan *const *plans, int count, bc_graph **out_graph)
{
    if (plans == NULL || count < 1 || count > MAX_NODES)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_graph_create", "plans is NULL or count %d outside [1, %d]",
                       count, MAX_NODES);
    bc_graph_node *nodes = calloc((size_t)count, sizeof *nodes);
    if (nodes == NULL)
        return BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "calloc", "cannot allocate %d graph nodes", count);
    for (int i = 0; i < count; i++)
        nodes[i] = (bc_graph_node){BC_NODE_GEMM, plans[i], NULL};
    bc_status st = bc_graph_create_nodes(stream, nodes, count, out_graph);
    free(nodes);
    return st;
}

bc_status bc_graph_launch(const bc_graph *graph, bc_stream *stream)
{
    if (graph == NULL || stream == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_graph_launch", "graph or stream is NULL");
    if (BC_STREAM_ON(stream, graph->dev, "the graph"))
        return BC_ERR_INVALID_ARGUMENT;
    return BC_CU(cuGraphLaunch, graph->exec, stream->handle);
}

bc_status bc_graph_update_node(bc_graph *graph, int index, const bc_graph_node *node)
{
    if (graph == NULL || node == NULL || index < 0 || index >= graph->count)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_graph_update_node",
                       "graph or node is NULL, or index %d outside [0, %d)", index, graph ? graph->count : 0);
    if (bc__dev_lost(graph->dev))
        return BC_LOST_FAIL("bc_graph_update_node");
    launch_view v;
    bc_status st = view_of(node, index, &v);
    if (st)
        return st;
    const gnode *g = &graph->nodes[index];
    if (v.dev != graph->dev)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "node", "node %d: the plan belongs to another device", index);
    if (node->kind != g->kind)
        return BC_FAIL(BC_ERR_GRAPH, "bc_graph_update_node", "node %d captured a %s plan; given a %s plan", index,
                       g->kind == BC_NODE_GEMM ? "GEMM" : "kernel", node->kind == BC_NODE_GEMM ? "GEMM" : "kernel");
    st = check_compatible(g, index, &v);
    if (st)
        return st;
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    kp.func = v.fn;
    kp.gridDimX = v.lc->gridDimX;
    kp.gridDimY = v.lc->gridDimY;
    kp.gridDimZ = v.lc->gridDimZ;
    kp.blockDimX = v.lc->blockDimX;
    kp.blockDimY = v.lc->blockDimY;
    kp.blockDimZ = v.lc->blockDimZ;
    kp.sharedMemBytes = v.lc->sharedMemBytes;
    kp.kernelParams = v.args;
    return BC_CU(cuGraphExecKernelNodeSetParams, graph->exec, g->node, &kp);
}

bc_status bc_graph_update(bc_graph *graph, int index, const bc_gemm_plan *plan)
{
    const bc_graph_node n = {BC_NODE_GEMM, plan, NULL};
    return bc_graph_update_node(graph, index, plan ? &n : NULL);
}

void bc_graph_destroy(bc_graph *graph)
{
    if (graph == NULL)
        return;
    BC_CU_CLEANUP(cuGraphExecDestroy, graph->exec);
    BC_CU_CLEANUP(cuGraphDestroy, graph->graph);
    for (int i = 0; i < graph->count; i++)
        if (graph->nodes[i].mod)
            graph->nodes[i].mod->uses--;
    bc__list_remove(&graph->link);
    free(graph);
}

void bc__graph_release(bc__link *node) { bc_graph_destroy((bc_graph *)node); }
