/* Internal: the resident executor (resident.c: lifecycle and the step path;
 * resident_program.c: validation and the program the kernel runs). */
#ifndef BC_RUNTIME_RESIDENT_INTERNAL_H
#define BC_RUNTIME_RESIDENT_INTERNAL_H

#include "barecuda/resident.h"
#include "gemm_internal.h"
#include "resident_abi.h"

_Static_assert(BC_RESIDENT_MAX_OPERATIONS == BC_RESIDENT_MAX_OPS, "the public and kernel operation limits");

/* The program for one executor, built on the host before anything is
 * allocated on the device. */
typedef struct bc__resident_prog {
    bc_resident_op ops[BC_RESIDENT_MAX_OPS];
    uint32_t count;          /* operations */
    uint32_t plans;
    uint32_t barriers;       /* operations flagged `barrier` */
    uint32_t max_tiles;      /* the most GEMM tiles of any phase */
    uint32_t sys_release;    /* a copy, or a plan's D outside the device arena, may write host memory */
    uint32_t sync_bytes;     /* the sync block with its split-K counters: zeroed per launch */
    uint64_t ws_bytes;       /* the split-K partials after it (ws_off counts from the block) */
    const char *config;      /* the plans' configuration name */
    CUfunction fn;           /* its resident kernel */
    uint32_t threads, smem;  /* its block and dynamic shared memory */
} bc__resident_prog;

/* Validates plans and cfg (copies included) and fills *out: the operations
 * in order (inputs, plans, outputs), each flagged `barrier` when it reads or
 * writes memory that an operation of the current phase writes, or writes
 * memory it reads; the phases' work-item lists and the split-K counters and
 * partial slots. Driver calls: the host copies' device addresses
 * (cuMemHostGetDevicePointer), a copy's device side outside the pools
 * (cuPointerGetAttributes), and the tensor maps of multicast plans
 * (cuTensorMapEncodeTiled). */
bc_status bc__resident_build(bc_device *dev, const bc_gemm_plan *const *plans, int count, const bc_resident_config *cfg,
                             bc__resident_prog *out);

struct bc_resident {
    bc__link link; /* first: bc_device_close releases executors through it */
    bc_device *dev;
    bc__resident_prog prog;
    bc_resident_config cfg;      /* sm_count resolved; the copy arrays are not kept */
    bc_devptr program;           /* the ops, then the sync block */
    void *words;                 /* pinned host: the doorbell, the completion word 128 B on */
    volatile uint64_t *doorbell, *done;
    uint64_t rung;               /* the last step rung */
    bc_stream *stream;           /* while running */
    int running;
    int stopping;                /* stop rung, the kernel not yet seen to end: no more steps */
    bc_resident_params params;   /* the kernel parameter (first_seq set per start) */
    CUlaunchConfig launch;
    CUlaunchAttribute attrs[1];  /* cooperative */
    void *args[1];
};

#endif
