/* Internal to the fake driver: handle structs, shared state, entry macros.
 * fake_driver.c holds the core (state, accounting, faults, reset, table),
 * fake_device.c init/errors/devices/contexts, fake_mem.c memory/streams/
 * events, fake_module.c modules/launches/tensor maps, fake_graph.c capture
 * and graphs. */
#ifndef BC_TESTS_FAKE_INTERNAL_H
#define BC_TESTS_FAKE_INTERNAL_H

#include "fake_driver.h"

/* Every live object is on its kind's list; a handle is valid iff it is found
 * there (pointer comparison only: unknown handles are never dereferenced). */
typedef struct fake_obj {
    struct fake_obj *prev, *next;
} fake_obj;

/* Until when kernels launched on a context or stream run (CLOCK_MONOTONIC
 * ns); stale once fake_finish_kernels moved the generation on. */
typedef struct fake_busy {
    uint64_t until_ns, gen;
} fake_busy;

enum { K_CTX, K_ALLOC, K_HOST, K_STREAM, K_EVENT, K_MODULE, K_GRAPH, K_EXEC, K_COUNT };

struct CUctx_st {
    fake_obj o;
    int device;
    unsigned flags;
    int primary;
    fake_busy busy;
};

typedef struct fake_alloc {
    fake_obj o;
    void *mem;
    size_t size;
    int device;
    CUcontext ctx;     /* current when it was made */
    unsigned flags;    /* cuMemHostAlloc / cuMemHostRegister flags (host allocations) */
    int registered;    /* a cuMemHostRegister'ed range: `mem` is the caller's, not freed */
} fake_alloc;

struct CUstream_st {
    fake_obj o;
    CUcontext ctx;
    unsigned flags;
    int priority;
    struct CUgraph_st *capture;   /* graph being captured into, or NULL */
    int capture_invalid;
    struct CUgraphNode_st *dep_out; /* what cuStreamGetCaptureInfo hands out */
    fake_busy busy;
};

struct CUevent_st {
    fake_obj o;
    CUcontext ctx;
    unsigned flags;
    int recorded;
    double t_ms;
};

struct CUfunc_st {
    struct CUfunc_st *next;
    struct CUmod_st *mod;
    char name[128];
    int attr[CU_FUNC_ATTRIBUTE_MAX];
};

struct CUmod_st {
    fake_obj o;
    CUcontext ctx;
    const void *image;     /* the fake's own copy */
    size_t size;
    int is_text;
    struct CUfunc_st *funcs;
};

enum { NODE_KERNEL, NODE_OTHER };

struct CUgraphNode_st {
    struct CUgraph_st *graph;
    int index;
    int type;
    fake_kernel_node k;
    void *param_ptrs[1];   /* what cuGraphKernelNodeGetParams hands out */
};

struct CUgraph_st {
    fake_obj o;
    uint64_t id;
    CUcontext ctx;
    struct CUgraphNode_st **nodes;
    int n, cap;
};

struct CUgraphExec_st {
    fake_obj o;
    uint64_t graph_id;
    int n;
    int *types;
    fake_kernel_node *k;   /* copies of the kernel nodes, by index */
};

typedef struct fake_dev_state {
    fake_device cfg;
    int attr_set[CU_DEVICE_ATTRIBUTE_MAX];
    int attr_val[CU_DEVICE_ATTRIBUTE_MAX];
    struct CUctx_st primary;  /* stable handle; alive while refcount > 0 */
    int primary_refs;
    size_t bytes_live;
} fake_dev_state;

#define FAKE_MAX_KERNEL_ATTRS 32
#define FAKE_MAX_KERNEL_SIGS 8
#define FAKE_CAPTURE_KEEP 16

typedef struct fake_kernel_sig {
    char kernel[128];
    int count;
    size_t offset[FAKE_MAX_PARAMS], size[FAKE_MAX_PARAMS];
} fake_kernel_sig;

typedef struct fake_state {
    /* configuration */
    fake_dev_state dev[FAKE_MAX_DEVICES];
    int ndev;
    int driver_version;
    CUresult init_result;
    size_t mem_limit, host_limit;
    int busy;
    float tick_ms;
    size_t param_size;
    CUresult module_fail;
    char module_log[1024];
    size_t next_image_size;
    struct {
        char kernel[128];
        CUfunction_attribute attr;
        int value;
    } kattr[FAKE_MAX_KERNEL_ATTRS];
    int nkattr;
    fake_kernel_sig sigs[FAKE_MAX_KERNEL_SIGS];
    int nsigs;
    int max_active_clusters; /* -1: worked out from the launch */

    /* state */
    int initialized;
    fake_obj live[K_COUNT];
    size_t host_bytes_live;
    double clock_ms;
    uint64_t graph_ids;
    int capture_n;                 /* the last capture's first nodes, kept after its graph goes */
    int capture_kernel[FAKE_CAPTURE_KEEP];
    fake_kernel_node capture[FAKE_CAPTURE_KEEP];
    uint64_t tmap_serial;

    /* accounting */
    uint64_t calls;
    uint64_t entry_calls[FAKE_ENTRY_COUNT];
    unsigned char *log;
    size_t log_len, log_cap;

    /* fault */
    int fault_mode;      /* 0 none, 1 by call index, 2 by entry */
    uint64_t fault_at;   /* call index, or n-th call of fault_entry */
    int fault_entry;
    uint64_t fault_entry_seen;
    CUresult fault_result;
    int fault_persistent;
    int failed_entry;
    uint64_t injected;

    /* records */
    fake_module_record module;
    fake_launch launch;
    uint64_t launches;
    fake_tensor_map_args tmap;
    uint64_t tmap_replaces;
    uint64_t graph_launches, graph_kernels;
    fake_kernel_node exec_update;
    uint64_t exec_updates;

    /* poisoned process and running kernels (fake_driver.h, "Faults") */
    CUresult poison;              /* non-zero: every context call returns it */
    int poison_on_sticky;         /* an injected sticky result poisons */
    CUresult fault_next_launch;   /* the next kernel started faults with it */
    uint64_t kernel_ns;           /* how long each started kernel runs */
    uint64_t kernel_gen;          /* fake_finish_kernels count: older fake_busy are idle */
    struct {
        uintptr_t base;
        size_t size;
    } unbacked[8];        /* fake_add_unbacked_range */
    int n_unbacked;
} fake_state;

extern fake_state fake__s;

void fake__lock(void);
void fake__unlock(void);

/* Locks, counts the call, and returns the injected result for it (or
 * CUDA_SUCCESS). Every entry point starts with it and leaves through
 * fake__leave, which unlocks. */
CUresult fake__enter(fake_entry e);
CUresult fake__leave(CUresult r);

/* Entry prologues. FAKE_ENTER: an injected result returns at once (and
 * "not initialised" too, unless the entry works before cuInit).
 * FAKE_ENTER_RELEASE: the body runs anyway; FAKE_RETURN then reports the
 * injected result in preference to the body's. */
#define FAKE_ENTER(name)                                                     \
    CUresult fake_inj_ = fake__enter(FAKE_E_##name);                         \
    if (fake_inj_ != CUDA_SUCCESS)                                           \
        return fake__leave(fake_inj_);                                       \
    if (!fake__s.initialized)                                                \
        return fake__leave(CUDA_ERROR_NOT_INITIALIZED)
#define FAKE_ENTER_ANYTIME(name)                                             \
    CUresult fake_inj_ = fake__enter(FAKE_E_##name);                         \
    if (fake_inj_ != CUDA_SUCCESS)                                           \
        return fake__leave(fake_inj_)
#define FAKE_ENTER_RELEASE(name)                                             \
    CUresult fake_inj_ = fake__enter(FAKE_E_##name);                         \
    if (fake_inj_ == CUDA_SUCCESS && !fake__s.initialized)                   \
        return fake__leave(CUDA_ERROR_NOT_INITIALIZED)
#define FAKE_RETURN(r) return fake__leave(fake_inj_ != CUDA_SUCCESS ? fake_inj_ : (r))

/* A kernel (or graph) launch on stream `s` (NULL: the default stream) of
 * context `c` was executed: applies fake_fault_next_launch and
 * fake_set_kernel_duration_ms. Called by the launch entries on success. */
void fake__kernel_started(CUcontext c, struct CUstream_st *s);

/* 1 while a kernel started on `b`'s context or stream still runs. */
int fake__busy(const fake_busy *b);

/* Sleeps until the kernels of `b` have finished: what freeing memory,
 * unloading a module, destroying a context and synchronising a stream do.
 * Holds the fake's lock meanwhile (tests with running kernels are single
 * threaded). `b` may be NULL (nothing to wait for). */
void fake__wait_busy(const fake_busy *b);

/* Object lists. */
void fake__link(int kind, fake_obj *o);
void fake__unlink(fake_obj *o);
int fake__find(int kind, const void *h);
int fake__count(int kind);

/* The calling thread's current context if it is alive, else NULL. */
CUcontext fake__current(void);
void fake__clear_current(void);
int fake__ctx_alive(CUcontext c);

/* Resolves a stream handle for an operation in the current context:
 * NULL / CU_STREAM_LEGACY / CU_STREAM_PER_THREAD give *out = NULL (the
 * default stream); CUDA_ERROR_INVALID_CONTEXT with no current context,
 * CUDA_ERROR_INVALID_HANDLE for an unknown stream or one of another context. */
CUresult fake__stream(CUstream h, struct CUstream_st **out);

/* Appends a node to a capturing stream's graph; NULL on malloc failure. */
struct CUgraphNode_st *fake__graph_add_node(struct CUgraph_st *g, int type);
struct CUgraph_st *fake__graph_new(CUcontext ctx);
void fake__graph_free(struct CUgraph_st *g);

/* The live function with handle h, or NULL. */
struct CUfunc_st *fake__find_func(const void *h);

/* The registered signature of `kernel`, or NULL (fake_kernel.c). */
const fake_kernel_sig *fake__kernel_sig(const char *kernel);

/* Copies a launch's first parameter (fake_set_param_size bytes) from
 * kernelParams[0], or the CU_LAUNCH_PARAM_BUFFER_POINTER of `extra`. */
CUresult fake__copy_params(const char *kernel, void **params, void **extra, unsigned char *dst, size_t *out_n);

/* Resident kernels (fake_resident.c); callers hold the lock. */
CUresult fake__occupancy(int *out, CUfunction f, int threads, size_t smem);
CUresult fake__resident_launch(const struct CUfunc_st *f, const CUlaunchConfig *cfg, void **params);
int fake__resident_busy(CUstream s);
void fake__resident_end_context(CUcontext c); /* NULL: every context */
void fake__resident_check_free(uint64_t lo, size_t n);
int fake__resident_live(void);
int fake__resident_live_ctx(CUcontext c); /* resident kernels of c still running */
void fake__resident_reset(void);

void fake__free_all_mem(void);
void fake__free_all_modules(void);
void fake__free_all_graphs(void);

void fake__fill_core(bc__driver *t);
void fake__fill_mem(bc__driver *t);
void fake__fill_module(bc__driver *t);
void fake__fill_graph(bc__driver *t);
void fake__fill_kernel(bc__driver *t);

#endif
