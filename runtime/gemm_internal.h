/* Internal: the GEMM plan and the tensor-map encoder. */
#ifndef BC_RUNTIME_GEMM_INTERNAL_H
#define BC_RUNTIME_GEMM_INTERNAL_H

#include "barecuda/gemm.h"
#include "gemm_abi.h"
#include "internal.h"

/* ceil(a / b) for the tile and chunk counts of a plan (they fit 32 bits). */
static inline uint32_t bc__ceil_div(uint64_t a, uint64_t b) { return (uint32_t)((a + b - 1) / b); }

/* Bytes per element of a GEMM operand type (f32 4, bf16 and f16 2). */
static inline uint64_t bc__dtype_bytes(bc_dtype t) { return t == BC_DTYPE_F32 ? 4u : 2u; }

/* Whether A's and B's rows both start every `bytes` bytes (their pitches
 * in bytes are multiples of it): 32, on the L2's sectors; 128, on its
 * lines. The rule's off-grid credit, its crowded round and the multicast
 * twins ask it. */
static inline int bc__gemm_rows_on(const bc_gemm_desc *d, uint64_t bytes)
{
    const uint64_t es = bc__dtype_bytes(d->ab_type);
    return (uint64_t)d->lda * es % bytes == 0 && (uint64_t)d->ldb * es % bytes == 0;
}

/* One compiled-in configuration: what the plan needs to know about a kernel. */
typedef struct bc__gemm_config {
    const char *name;
    uint32_t bm, bn, bk;     /* CTA tile */
    uint32_t threads;
    uint32_t smem_bytes;
    uint32_t tmem_cols;      /* tensor-memory columns each CTA allocates (Blackwell), else 0 */
    uint32_t weight_pct;     /* the rule's relative throughput of a full wave (README) */
    uint32_t off_line_pct;   /* the rule's credit, in % of the cost, where A's or B's rows do not start on
                                128-byte lines (scaled by K up to off_full_kb k-blocks) ... */
    uint32_t off_sector_pct; /* ... or not even on 32-byte sectors: this configuration's loads lose that much
                                less there than the others' (0: no credit) */
    uint32_t off_full_kb;
    uint32_t off_twin_pct;    /* ... instead of off_sector_pct, off the sectors with at least off_twin_min_kb
                                 k-blocks and at most off_twin_rows tile rows (0: none; gemm_rule.c,
                                 off_grid_credit) */
    uint32_t off_twin_min_kb;
    uint32_t off_twin_rows;
    uint32_t short_max_kb;   /* the rule's surcharge, in % of the cost, for K of at most short_max_kb k-blocks
                                (gemm_rule.c, rule_cost; 0: none) ... */
    uint32_t short_pct;      /* ... this much */
    int tma;                 /* A and B are read through tensor maps (else through params.a/b) */
    int tma_store;           /* the epilogue can store D through tmap_d */
    int split;               /* split-K over a cluster of S = 2, 4 or 8 CTAs per tile */
    int persistent;          /* whole-tile grid of min(tiles, SMs x ctas_per_sm) CTAs walking the tiles (else one CTA per tile) */
    uint32_t ctas_per_sm;    /* persistent: CTAs an SM holds at once (0 counts as 1) */
    int pdl;                 /* the kernel waits for the previous grid (griddepcontrol.wait) */
    uint32_t max_m;          /* 0: any M; else a skinny-M kernel, only for M <= max_m */
    uint32_t rule_min_kb;    /* the rule walks it only from this many k-blocks (0: any) */
    uint32_t rule_max_m;     /* 0: the rule walks it for any M; else only for M <= rule_max_m (a plan that names
                                it takes any M) */
    uint32_t max_kb;         /* 0: any K; else a short-K kernel the rule takes for K of at most max_kb k-blocks */
    uint32_t min_m;          /* a short-K kernel: only for M >= min_m (the skinny ones keep M below) */
    uint32_t sm_share;       /* a short-K kernel: only with tiles for at least 1 / sm_share of the SMs (0: any number) */
    uint32_t wide_max_kb;    /* a short-K kernel: also up to this many k-blocks when its tiles outnumber half the SMs (0: no) ... */
    int wide_on_sectors;     /* ... and, when set, A's and B's rows lie on the 32-byte sectors */
    uint32_t a_rows;         /* rows of A a stage loads (the A tensor map's box) */
    bc__kernel_id kernel_dense; /* 0: none; else its dense-row kernel (BC_GEMM_F_DENSE_A: A's short rows copied) */
    uint32_t dense_min_pct;     /* ... taken only where it saves this % of A's row requests (gemm_plan.c) */
    uint32_t split_cost_kb;  /* split-K: the rule's cost of the exchange, in k-blocks */
    uint32_t rule_max_split; /* split-K: the rule's largest split (0: BC_MAX_SPLIT_K; a split asked for may be more) */
    bc__kernel_id kernel_sk; /* 0: none; else its stream-K twin (sk_sched.h; the optional group BC_KERNELS_STREAM_K) */
    bc__kernel_id kernel_mc; /* 0: none; else its multicast twin (clusters sharing A's or B's loads; gemm_plan.c) */
    uint32_t mc_shape;       /* ... its blocks of tiles (kernels_ptx/gemm_sm90.c, SM90_MC): bit 0, two tile rows
                                sharing B; bit 1, two tile columns sharing A */
    uint32_t mc_min_kb;      /* the twin only for K of at least this many k-blocks (0: any) */
    uint32_t mc_on_min_kb;   /* ... and with rows on the 32-byte sectors (but off the lines), from this many (0: never) */
    uint32_t cluster_wave_pct; /* 0: a split wave fills every SM; else the % of SMs its clusters fill at once */
    uint32_t cluster8_pct;     /* clusters of 8 on more than this % of the SMs ... */
    uint32_t cluster8_cost_kb; /* ... cost this many k-blocks more */
    const char *crowd_alt;     /* NULL; else a whole-tile configuration the rule takes instead where this
                                  one's single round fills more than half the SMs and crowd_alt's less than
                                  half, from crowd_min_kb k-blocks (gemm_rule.c, bc__gemm_crowded_alt) */
    uint32_t crowd_min_kb;     /* ... the least k-blocks for it */
    const char *ud_alt;        /* NULL; else a whole-tile configuration the rule takes instead for a plain
                                  epilogue (no C, bias or ReLU) on more than one tile column of this one:
                                  where D's pitch or N is off 16 bytes (the copy-out epilogue), from ud_min_rounds
                                  rounds of this one's tiles for a 16-bit D and ud_min_rounds_f32 for an f32
                                  one (gemm_rule.c, bc__gemm_unaligned_alt) ... */
    uint32_t ud_min_rounds;    /* ... the least rounds (tiles over SMs) for a 16-bit D (0: never) ... */
    uint32_t ud_min_rounds_f32; /* ... and for an f32 D (0: never); */
    uint32_t ad_min_rounds;    /* ... and where D's pitch and N are on 16 bytes (the TMA store), K from ad_min_k and
                                  within max_kb k-blocks and the plan not on the dense-row kernel, from this
                                  many rounds, either D type (0: never; gemm_rule.c, bc__gemm_aligned_alt) */
    uint32_t ad_min_k;         /* ... the least K for it */
    uint32_t dot_max_out;    /* 0: a tile kernel; else the dot kernel, for at most this many outputs a CTA ... */
    uint32_t dot_min_k;      /* ... and, unless named, K of at least this ... */
    uint32_t dot_max_loads;  /* ... and at most this many 16-byte loads a CTA; and, for dot_cede_min_q
                                smaller-side rows or more (0: any), K past dot_cede_max_k (gemm_rule.c) */
    uint32_t dot_cede_min_q, dot_cede_max_k;
    uint32_t gemv_max_q;     /* 0: not the GEMV kernel; else it, for min(M, N) of at most this many rows, any
                                K (gemm_rule.c, takes_gemv); unless named, from gemv_rule_min_q rows, and
                                max(M, N) and K at most gemv_rule_max_rows and gemv_rule_max_k where set */
    uint32_t gemv_rule_min_q, gemv_rule_max_rows, gemv_rule_max_k;
    bc__kernel_id kernel[2][3]; /* [ab_type][d_type] */
} bc__gemm_config;

struct bc_gemm_plan {
    bc__link link; /* first: bc_device_close releases plans through it */
    bc_device *dev;
    bc_gemm_desc desc;     /* as the caller gave it, leading dimensions resolved */
    int swapped;           /* the kernel runs the transpose of desc, D^T = B . A^T (N = 1; gemm_rule.c, swap_pays) */
    const bc__gemm_config *config;
    CUfunction fn;         /* the configuration's kernel, or its dense-row kernel (BC_GEMM_F_DENSE_A) */
    CUlaunchConfig launch; /* hStream filled per launch */
    CUlaunchAttribute attrs[2]; /* programmatic serialization; a split-K launch's cluster dimension */
    void *args[1];         /* = { &params } */
    bc_gemm_params params; /* the packed kernel parameter, tensor maps inside */
    bc_devptr sk_ws;       /* the stream-K workspace in the device arena, or 0 */
    uint32_t mc;           /* 0, or the plan runs the configuration's multicast twin (kernel_mc): its mc_shape */
    bc_gemm_plan_info info;
};

/* resident_program.c: whether a resident kernel runs configuration `config` (bc_gemm_desc.resident). */
int bc__resident_runs(const char *config);

/* gemm_plan.c. The plan's A and B maps as its configuration's whole-tile
 * kernel reads them (boxes of a_rows and bn rows): the plan's own, or
 * re-encoded where the plan runs a multicast twin, whose boxes of the
 * shared operand are half that (the resident kernels run the whole-tile
 * code on the same operands). */
bc_status bc__gemm_plan_whole_maps(const bc_gemm_plan *pl, uint64_t out_a[16], uint64_t out_b[16]);

/* gemm_operands.c. Layout: resolves the defaulted leading dimensions and
 * checks every arithmetic rule (statuses 50..55), no driver call. Memory:
 * every operand's extent against the memory it lies in (ptrcheck.h) and the
 * overlaps that race: D with A, B or bias, and D with C unless C is D
 * exactly (same base and leading dimension). `d_by_tma`: the plan stores D
 * through a tensor map; `c_by_tma`: it reads C through one. `cache` (may be NULL: a local one) shares driver
 * answers between the operands and counts the driver calls. */
bc_status bc__gemm_check_layout(bc_gemm_desc *d);
bc_status bc__gemm_check_memory(bc_device *dev, const bc_gemm_desc *d, int d_by_tma, int c_by_tma,
                                bc__ptr_cache *cache);

/* A rank-2 tiled tensor map over a row-major [rows x cols] matrix of `type`
 * elements with `row_bytes` between rows, box {box_cols, box_rows},
 * swizzled over `swizzle_bytes` (128 or 64). `what` names the operand in
 * messages ("A", "B", "D"). */
typedef struct bc__tmap_desc {
    const char *what;
    bc_dtype type;
    uint64_t base, cols, rows, row_bytes;
    uint32_t box_cols, box_rows, swizzle_bytes;
} bc__tmap_desc;

/* Checks every documented cuTensorMapEncodeTiled rule first; a violation
 * returns BC_ERR_TENSOR_MAP naming the rule and logs every parameter. */
bc_status bc__tmap_encode(uint64_t map[16], const bc__tmap_desc *t);

/* Points an encoded map at a new base (same rules on the address). */
bc_status bc__tmap_set_address(uint64_t map[16], const char *what, uint64_t base);

#endif
