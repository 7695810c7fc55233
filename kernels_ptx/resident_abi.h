/* The resident executor's ABI, shared by the host (runtime/resident*.c) and
 * the device (resident_sm90.c). One persistent kernel runs a fixed program
 * of operations step after step:
 *
 *   program  device memory, written once when the executor is created: one
 *            bc_resident_op per operation (a GEMM of a plan, or a 16-byte
 *            granular copy), each 640 bytes with its tensor maps 64-byte
 *            aligned (A, B, D at the front, C at the back); a GEMV plan's
 *            operation has no tensor maps, its bc_resident_gemv in their
 *            place;
 *   sync     BC_RESIDENT_SYNC_BYTES of device memory, zeroed before each
 *            launch: the grid barrier's arrival counter and the step word
 *            CTA 0 releases to the others, each on its own 128-byte line,
 *            then one u32 arrival counter per tile of the split-K GEMMs
 *            (per run of rows of a split GEMV plan);
 *   partials after the sync block, split-K GEMMs only (not zeroed): each
 *            work item's f32 partial tile (BC_RESIDENT_GEMV_SLOT_BYTES for
 *            a GEMV plan's), summed by the tile's last arrival in the
 *            order of the items;
 *   doorbell a u64 in mapped pinned host memory the host writes: the
 *            sequence number of the step to run (BC_RESIDENT_SEQ_MASK),
 *            plus BC_RESIDENT_STOP when the kernel must exit after it;
 *   done     a u64 in mapped pinned host memory the kernel writes: the
 *            sequence number of the last completed step.
 *
 * Both compilers see this header: fixed-width types, explicit alignment and
 * the static size checks below.
 */
#ifndef BC_KERNELS_RESIDENT_ABI_H
#define BC_KERNELS_RESIDENT_ABI_H

#include <stdint.h>

#include "gemm_abi.h"

#define BC_RESIDENT_MAX_OPS 16
#define BC_RESIDENT_MAX_SPLIT 8 /* split-K ways of a resident plan: the plans' own maximum (clusters of 8) */
#define BC_RESIDENT_STOP (1ull << 63)
#define BC_RESIDENT_SEQ_MASK (BC_RESIDENT_STOP - 1u)

/* bc_resident_opinfo.kind */
#define BC_RESIDENT_OP_GEMM 1u
#define BC_RESIDENT_OP_COPY 2u
#define BC_RESIDENT_OP_GEMV 3u /* a GEMM of a GEMV plan (gemm_gemv.c; resident_gemv.c) */

/* The sync block (device memory, zeroed before each launch). */
#define BC_RESIDENT_SYNC_ARRIVE 0   /* u64: grid-barrier arrivals, counted up forever */
#define BC_RESIDENT_SYNC_STEP 128   /* u64: the doorbell value CTA 0 hands to the other CTAs */
/* split-K arrival counters (u32, one per tile of a split GEMM) follow the
 * fixed words: zeroed before each launch with them */
#define BC_RESIDENT_SYNC_CTR BC_RESIDENT_SYNC_BYTES
#ifdef BC_RES_TRACE /* diagnostic builds: 8 steps x 132 CTAs x 32 stamps of 16 bytes after the block */
#define BC_RESIDENT_SYNC_BYTES (256 + 8 * 132 * 32 * 16)
#else
#define BC_RESIDENT_SYNC_BYTES 256
#endif

/* What the kernel needs of one operation besides its tensor maps: a GEMM's
 * epilogue and tile-walk parameters, copied from its plan; for a copy, d is
 * the destination, c the source and bias the byte count (all multiples of
 * 16). The kernel keeps these in shared memory for the whole run. */
typedef struct bc_resident_opinfo {
    uint64_t d, c, bias;
    uint32_t m, n, ldd, ldc;
    float alpha, beta;
    uint32_t flags;              /* BC_GEMM_F_* */
    uint32_t ab_type, d_type;    /* bc_dtype */
    uint32_t tiles_m, tiles_n, k_blocks, group_m;
    uint8_t kind;                /* BC_RESIDENT_OP_* */
    uint8_t barrier;             /* 1: a grid-wide barrier precedes this operation */
    uint8_t prefetch_b;          /* GEMM after a barrier: the phase before does not write B, so its
                                    loads may start before the barrier */
    uint8_t split;               /* GEMM: its plan's split-K count S (1: whole tiles); a tile is S
                                    work items, item r reducing k-blocks [kb*r/S, kb*(r+1)/S) */
    uint32_t tile0;              /* GEMM or GEMV: its first work item in the item list of its phase */
    uint32_t phase_tiles;        /* GEMM or GEMV: the work items of every GEMM and GEMV of its phase */
    uint32_t ctr0;               /* split GEMM or GEMV: its first tile's (run's) arrival counter (u32s
                                    from BC_RESIDENT_SYNC_CTR, zeroed with the sync block) */
    uint32_t ws_off;             /* split GEMM or GEMV: byte offset from the sync block of its partials,
                                    one slot per work item (ar x bn f32 a tile's; a GEMV run's
                                    BC_RESIDENT_GEMV_SLOT_BYTES), tile after tile */
} bc_resident_opinfo;

typedef struct bc_resident_op {
    _Alignas(64) uint64_t tmap_a[16]; /* GEMM: the plan's tensor maps, as bc_gemm_params */
    _Alignas(64) uint64_t tmap_b[16];
    _Alignas(64) uint64_t tmap_d[16];
    bc_resident_opinfo x;
    uint32_t reserved_[8];            /* pads to 512 */
    _Alignas(64) uint64_t tmap_c[16]; /* GEMM with BC_GEMM_F_C_SMEM: the plan's C map */
} bc_resident_op;

/* A GEMV operation's operands, at the front of its bc_resident_op: the
 * plan's A and B and their pitches (elements), and K. Its grid (tiles_m
 * row runs, split K slices: tiles_n = 1) is the launched plan's, each of
 * its CTAs a work item. */
typedef struct bc_resident_gemv {
    uint64_t a, b;
    uint32_t lda, ldb, k, reserved_;
} bc_resident_gemv;

/* A split GEMV work item's partial slot: its CTA's sums, at most
 * BC_GEMV_MAX_COLS larger-side rows x 16. */
#define BC_RESIDENT_GEMV_SLOT_BYTES (BC_GEMV_MAX_COLS * 16 * 4)

/* The kernel's one parameter (read field by field). */
typedef struct bc_resident_params {
    uint64_t program;      /* device address of bc_resident_op[ops] */
    uint64_t sync;         /* device address of the sync block */
    uint64_t doorbell;     /* device address of the doorbell word (mapped pinned host memory) */
    uint64_t done;         /* device address of the completion word (mapped pinned host memory) */
    uint64_t first_seq;    /* the last step completed before this launch */
    uint32_t ops;          /* 1..BC_RESIDENT_MAX_OPS */
    uint32_t spin_ns;      /* after a step, poll without sleeping this long */
    uint32_t max_sleep_ns; /* then sleep between polls, doubling up to this */
    uint32_t sys_release;  /* 1: a copy writes host memory: arrivals release at system scope */
} bc_resident_params;

_Static_assert(sizeof(bc_resident_opinfo) == 96, "bc_resident_opinfo layout changed: update both sides");
_Static_assert(sizeof(bc_resident_op) == 640, "bc_resident_op layout changed: update both sides");
_Static_assert(__builtin_offsetof(bc_resident_op, x) == 384, "bc_resident_op.x offset");
_Static_assert(__builtin_offsetof(bc_resident_op, tmap_c) == 512, "bc_resident_op.tmap_c offset");
_Static_assert(sizeof(bc_resident_params) == 56, "bc_resident_params layout changed: update both sides");

/* Shared memory a resident kernel needs beyond its GEMM configuration's:
 * the operation infos, a 64-byte control block and a 16-byte entry per
 * phase (at most one per operation). */
#define BC_RESIDENT_SMEM_EXTRA (BC_RESIDENT_MAX_OPS * 96 + 64 + BC_RESIDENT_MAX_OPS * 16)
#define BC_RESIDENT_SMEM_OF(...) (BC__APPLY(BC__SM90_SMEM5, __VA_ARGS__) + BC_RESIDENT_SMEM_EXTRA)

#endif
