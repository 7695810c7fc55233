/* Fake driver: stream capture and graphs.
 *
 * cuStreamBeginCapture starts a graph (live from then on); launches, copies
 * and records on the capturing stream become its nodes; a synchronising call
 * on it (query, synchronize) invalidates the capture, and cuStreamEndCapture
 * then fails with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and frees the graph.
 * An instantiated graph keeps its own copies of the kernel nodes, which
 * cuGraphExecKernelNodeSetParams updates. */
#include <stdlib.h>
#include <string.h>

#include "fake_internal.h"

struct CUgraph_st *fake__graph_new(CUcontext ctx)
{
    struct CUgraph_st *g = calloc(1, sizeof *g);
    if (g == NULL)
        return NULL;
    g->id = ++fake__s.graph_ids;
    g->ctx = ctx;
    fake__link(K_GRAPH, &g->o);
    return g;
}

void fake__graph_free(struct CUgraph_st *g)
{
    for (int i = 0; i < g->n; i++)
        free(g->nodes[i]);
    free(g->nodes);
    fake__unlink(&g->o);
    free(g);
}

struct CUgraphNode_st *fake__graph_add_node(struct CUgraph_st *g, int type)
{
    if (g->n == g->cap) {
        int cap = g->cap ? g->cap * 2 : 8;
        struct CUgraphNode_st **p = realloc(g->nodes, (size_t)cap * sizeof *p);
        if (p == NULL)
            return NULL;
        g->nodes = p;
        g->cap = cap;
    }
    struct CUgraphNode_st *node = calloc(1, sizeof *node);
    if (node == NULL)
        return NULL;
    node->graph = g;
    node->index = g->n;
    node->type = type;
    node->param_ptrs[0] = node->k.params;
    g->nodes[g->n++] = node;
    return node;
}

static struct CUgraphNode_st *find_node(const void *h)
{
    if (h == NULL)
        return NULL;
    fake_obj *head = &fake__s.live[K_GRAPH];
    for (fake_obj *o = head->next; o != head; o = o->next) {
        struct CUgraph_st *g = (struct CUgraph_st *)o;
        for (int i = 0; i < g->n; i++)
            if ((const void *)g->nodes[i] == h)
                return g->nodes[i];
    }
    return NULL;
}

static void free_exec(struct CUgraphExec_st *e)
{
    fake__unlink(&e->o);
    free(e->types);
    free(e->k);
    free(e);
}

/* ---------------------------------------------------------------- capture */

static CUresult fake_cuStreamBeginCapture(CUstream h, CUstreamCaptureMode mode)
{
    FAKE_ENTER(cuStreamBeginCapture);
    if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD)
        FAKE_RETURN(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    if (!fake__find(K_STREAM, h))
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (h->capture != NULL)
        FAKE_RETURN(CUDA_ERROR_ILLEGAL_STATE);
    h->capture = fake__graph_new(h->ctx);
    if (h->capture == NULL)
        FAKE_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    h->capture_invalid = 0;
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuStreamEndCapture(CUstream h, CUgraph *out)
{
    FAKE_ENTER(cuStreamEndCapture);
    if (out == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fake__find(K_STREAM, h))
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    if (h->capture == NULL)
        FAKE_RETURN(CUDA_ERROR_ILLEGAL_STATE);
    struct CUgraph_st *g = h->capture;
    h->capture = NULL;
    if (h->capture_invalid) {
        h->capture_invalid = 0;
        fake__graph_free(g);
        *out = NULL;
        FAKE_RETURN(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    *out = g;
    fake__s.capture_n = g->n < FAKE_CAPTURE_KEEP ? g->n : FAKE_CAPTURE_KEEP;
    for (int i = 0; i < fake__s.capture_n; i++) {
        fake__s.capture_kernel[i] = g->nodes[i]->type == NODE_KERNEL;
        fake__s.capture[i] = g->nodes[i]->k;
    }
    FAKE_RETURN(CUDA_SUCCESS);
}

/* The stream's capture state; the dependency set is the last node added
 * (captures here are single-stream chains). */
static CUresult fake_cuStreamGetCaptureInfo(CUstream h, CUstreamCaptureStatus *status, cuuint64_t *id,
                                            CUgraph *graph, const CUgraphNode **deps, size_t *ndeps)
{
    FAKE_ENTER(cuStreamGetCaptureInfo);
    if (status == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    struct CUstream_st *s = NULL;
    CUresult r = fake__stream(h, &s);
    if (r != CUDA_SUCCESS)
        FAKE_RETURN(r);
    struct CUgraph_st *g = s ? s->capture : NULL;
    *status = g == NULL ? CU_STREAM_CAPTURE_STATUS_NONE
              : s->capture_invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                   : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (g == NULL)
        FAKE_RETURN(CUDA_SUCCESS);
    if (id)
        *id = g->id;
    if (graph)
        *graph = g;
    s->dep_out = g->n ? g->nodes[g->n - 1] : NULL;
    if (deps)
        *deps = g->n ? (const CUgraphNode *)&s->dep_out : NULL;
    if (ndeps)
        *ndeps = g->n ? 1 : 0;
    FAKE_RETURN(CUDA_SUCCESS);
}

const fake_kernel_node *fake_last_capture_node(int index)
{
    if (index < 0 || index >= fake__s.capture_n || !fake__s.capture_kernel[index])
        return NULL;
    return &fake__s.capture[index];
}

/* ----------------------------------------------------------------- graphs */

static CUresult fake_cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g,
                                                 unsigned long long flags)
{
    FAKE_ENTER(cuGraphInstantiateWithFlags);
    if (out == NULL || (flags & ~0xFull))
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fake__find(K_GRAPH, g))
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    struct CUgraphExec_st *e = calloc(1, sizeof *e);
    if (e == NULL)
        FAKE_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    e->graph_id = g->id;
    e->n = g->n;
    if (g->n) {
        e->types = calloc((size_t)g->n, sizeof *e->types);
        e->k = calloc((size_t)g->n, sizeof *e->k);
        if (e->types == NULL || e->k == NULL) {
            free(e->types);
            free(e->k);
            free(e);
            FAKE_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
        }
    }
    for (int i = 0; i < g->n; i++) {
        e->types[i] = g->nodes[i]->type;
        e->k[i] = g->nodes[i]->k;
    }
    fake__link(K_EXEC, &e->o);
    *out = e;
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuGraphLaunch(CUgraphExec e, CUstream h)
{
    FAKE_ENTER(cuGraphLaunch);
    if (!fake__find(K_EXEC, e))
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    struct CUstream_st *s = NULL;
    CUresult r = fake__stream(h, &s);
    if (r != CUDA_SUCCESS)
        FAKE_RETURN(r);
    if (s != NULL && s->capture != NULL) {
        if (fake__graph_add_node(s->capture, NODE_OTHER) == NULL)
            FAKE_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
        FAKE_RETURN(CUDA_SUCCESS);
    }
    fake__s.graph_launches++;
    for (int i = 0; i < e->n; i++)
        fake__s.graph_kernels += e->types[i] == NODE_KERNEL;
    fake__kernel_started(fake__current(), s);
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuGraphExecDestroy(CUgraphExec e)
{
    FAKE_ENTER_RELEASE(cuGraphExecDestroy);
    if (!fake__find(K_EXEC, e))
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    free_exec(e);
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuGraphDestroy(CUgraph g)
{
    FAKE_ENTER_RELEASE(cuGraphDestroy);
    if (!fake__find(K_GRAPH, g))
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    fake__graph_free(g);
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *num)
{
    FAKE_ENTER(cuGraphGetNodes);
    if (num == NULL || !fake__find(K_GRAPH, g))
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (nodes == NULL) {
        *num = (size_t)g->n;
        FAKE_RETURN(CUDA_SUCCESS);
    }
    size_t got = 0;
    for (size_t i = 0; i < *num; i++) {
        nodes[i] = i < (size_t)g->n ? g->nodes[i] : NULL;
        got += i < (size_t)g->n;
    }
    *num = got;
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuGraphKernelNodeGetParams(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
    FAKE_ENTER(cuGraphKernelNodeGetParams);
    struct CUgraphNode_st *n = find_node(h);
    if (p == NULL || n == NULL || n->type != NODE_KERNEL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    memset(p, 0, sizeof *p);
    p->func = n->k.func;
    p->gridDimX = n->k.grid[0];
    p->gridDimY = n->k.grid[1];
    p->gridDimZ = n->k.grid[2];
    p->blockDimX = n->k.block[0];
    p->blockDimY = n->k.block[1];
    p->blockDimZ = n->k.block[2];
    p->sharedMemBytes = n->k.smem;
    p->kernelParams = n->param_ptrs;
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode h,
                                                    const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
    FAKE_ENTER(cuGraphExecKernelNodeSetParams);
    if (!fake__find(K_EXEC, e))
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    struct CUgraphNode_st *n = find_node(h);
    if (p == NULL || n == NULL || n->graph->id != e->graph_id || n->index >= e->n ||
        e->types[n->index] != NODE_KERNEL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    struct CUfunc_st *f = fake__find_func(p->func);
    if (f == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    if (!p->gridDimX || !p->gridDimY || !p->gridDimZ || !p->blockDimX || !p->blockDimY ||
        !p->blockDimZ)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    fake_kernel_node k;
    memset(&k, 0, sizeof k);
    CUresult r = fake__copy_params(f->name, p->kernelParams, p->extra, k.params, &k.param_bytes);
    if (r != CUDA_SUCCESS)
        FAKE_RETURN(r);
    k.func = p->func;
    k.grid[0] = p->gridDimX;
    k.grid[1] = p->gridDimY;
    k.grid[2] = p->gridDimZ;
    k.block[0] = p->blockDimX;
    k.block[1] = p->blockDimY;
    k.block[2] = p->blockDimZ;
    k.smem = p->sharedMemBytes;
    e->k[n->index] = k;
    fake__s.exec_update = k;
    fake__s.exec_updates++;
    FAKE_RETURN(CUDA_SUCCESS);
}

uint64_t fake_graph_launches(void) { return fake__s.graph_launches; }
uint64_t fake_graph_kernels_run(void) { return fake__s.graph_kernels; }
const fake_kernel_node *fake_last_exec_update(void) { return &fake__s.exec_update; }
uint64_t fake_exec_updates(void) { return fake__s.exec_updates; }

size_t fake_graph_node_count(CUgraph g)
{
    fake__lock();
    size_t n = fake__find(K_GRAPH, g) ? (size_t)g->n : 0;
    fake__unlock();
    return n;
}

void fake__free_all_graphs(void)
{
    fake_obj *head = &fake__s.live[K_EXEC];
    while (head->next != head)
        free_exec((struct CUgraphExec_st *)head->next);
    head = &fake__s.live[K_GRAPH];
    while (head->next != head)
        fake__graph_free((struct CUgraph_st *)head->next);
}

void fake__fill_graph(bc__driver *t)
{
    t->cuStreamBeginCapture = fake_cuStreamBeginCapture;
    t->cuStreamEndCapture = fake_cuStreamEndCapture;
    t->cuStreamGetCaptureInfo = fake_cuStreamGetCaptureInfo;
    t->cuGraphInstantiateWithFlags = fake_cuGraphInstantiateWithFlags;
    t->cuGraphLaunch = fake_cuGraphLaunch;
    t->cuGraphExecDestroy = fake_cuGraphExecDestroy;
    t->cuGraphDestroy = fake_cuGraphDestroy;
    t->cuGraphGetNodes = fake_cuGraphGetNodes;
    t->cuGraphKernelNodeGetParams = fake_cuGraphKernelNodeGetParams;
    t->cuGraphExecKernelNodeSetParams = fake_cuGraphExecKernelNodeSetParams;
}
