/* barecuda — graphs: an ordered sequence of GEMM plans and kernel plans
 * captured once into one instantiated CUDA graph; a replay is one
 * cuGraphLaunch, and any node's parameters are patched in place
 * (cuGraphExecKernelNodeSetParams), never re-instantiated.
 *
 * Nodes run in the order given, each after the previous one has finished,
 * except that a node whose plan is programmatic (every barecuda GEMM on
 * compute capability 9.0, the sm_90a image; a kernel plan with
 * `programmatic` set) may start its set-up during the previous node's tail,
 * exactly as in stream mode. The portable GEMMs (sm_80, sm_120 images) are
 * not programmatic.
 */
#ifndef BARECUDA_GRAPH_H
#define BARECUDA_GRAPH_H

#include "gemm.h"
#include "module.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bc_graph bc_graph;

typedef enum bc_graph_node_kind {
    BC_NODE_GEMM = 0,
    BC_NODE_KERNEL = 1,
} bc_graph_node_kind;

/* One node: a GEMM plan or a kernel plan (the other pointer NULL). */
typedef struct bc_graph_node {
    bc_graph_node_kind kind;
    const bc_gemm_plan *gemm;
    const bc_kernel_plan *kernel;
} bc_graph_node;

/* Contract: captures nodes[0..count-1] in that order on `stream` (which must
 * be idle and not already capturing) and instantiates the graph. count is in
 * [1, 4096]; every plan belongs to the stream's device. On failure
 * *out_graph is untouched and bc_last_error() names the failing node or
 * call (never a clean-up call); if cuStreamEndCapture itself fails the
 * driver may leave the stream capturing, and the stream should be
 * destroyed. While the graph lives, the modules of its kernel plans cannot
 * be unloaded (BC_ERR_IN_USE). BC_ERR_DEVICE_LOST at once, with no driver
 * call, after the process lost its GPU. */
bc_status bc_graph_create_nodes(bc_stream *stream, const bc_graph_node *nodes, int count, bc_graph **out_graph);

/* Contract: bc_graph_create_nodes over GEMM plans only. */
bc_status bc_graph_create(bc_stream *stream, const bc_gemm_plan *const *plans, int count, bc_graph **out_graph);

/* Contract: one cuGraphLaunch on `stream`; no allocation, no lock. A NULL
 * graph or stream, or a stream of another device handle than the graph's, is
 * BC_ERR_INVALID_ARGUMENT, with no driver call. */
bc_status bc_graph_launch(const bc_graph *graph, bc_stream *stream);

/* Contract: pushes node `index`'s current parameters (after
 * bc_gemm_plan_set_pointers or bc_kernel_plan_set_param on its plan, or
 * from another plan of the same kind that is launch-compatible: same
 * kernel, grid, block, cluster, dynamic shared memory and programmatic
 * setting) into the instantiated graph in place; never re-instantiates.
 * BC_ERR_GRAPH naming the difference when the plan is not compatible with
 * the captured node; nothing changes then. BC_ERR_DEVICE_LOST at once after
 * the process lost its GPU. */
bc_status bc_graph_update_node(bc_graph *graph, int index, const bc_graph_node *node);

/* Contract: bc_graph_update_node for a GEMM node. */
bc_status bc_graph_update(bc_graph *graph, int index, const bc_gemm_plan *plan);

/* Contract: destroys the graph. NULL is a no-op. Leaves bc_last_error()
 * unchanged. */
void bc_graph_destroy(bc_graph *graph);

#ifdef __cplusplus
}
#endif
#endif
