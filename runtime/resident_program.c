/* The resident executor's program: validation of the plans and copies, the
 * operations the kernel runs, and where grid-wide barriers go. */
#include <string.h>

#include "error.h"
#include "ptrcheck.h"
#include "resident_internal.h"

/* The resident kernel of each sm_90a configuration that has one: the
 * whole-tile ones but 128x256 and 64x256 (and its split twin 64x256s), and the narrow and skinny split-K ones,
 * which run in their whole-tile twins' kernels (the same tile and ring; the
 * partials go through global memory instead of the cluster's shared
 * memory), as do the short-K twins 128x64t, 64x32t and 64x32m16t (the
 * same tiles; the resident rings are their twins'). The GEMV kernel's plans
 * run alone, in 64x32m16's kernel, or beside 128x64's and its twin's
 * (`with_gemv`; kernels_ptx/resident_gemv.c): 128x128's consumers have no
 * registers to spare, and beside tile plans in the kernels of one consumer
 * warpgroup compute-sanitizer's racecheck reports hazards on the GEMV
 * partials whose cause is not found (and a split GEMV item's flag in the
 * control block would race a split tile item's there:
 * kernels_ptx/PERF_NOTES.md, change 88), so that mix is refused. */
static const struct {
    const char *config;
    bc__kernel_id kernel;
    uint32_t smem;
    uint8_t with_gemv; /* runs GEMV plans beside its tile plans */
} kernels[] = {
    {"sm90_64x32", BC_K_RESIDENT_SM90_64X32, BC_RESIDENT_SMEM_OF(BC_SM90_CFG_64X32), 0},
    {"sm90_64x32s", BC_K_RESIDENT_SM90_64X32, BC_RESIDENT_SMEM_OF(BC_SM90_CFG_64X32), 0},
    {"sm90_64x32t", BC_K_RESIDENT_SM90_64X32, BC_RESIDENT_SMEM_OF(BC_SM90_CFG_64X32), 0},
    {"sm90_64x32m16", BC_K_RESIDENT_SM90_64X32M16, BC_RESIDENT_SMEM_OF(BC_SM90_CFG_64X32M16), 0},
    {"sm90_64x32m16s", BC_K_RESIDENT_SM90_64X32M16, BC_RESIDENT_SMEM_OF(BC_SM90_CFG_64X32M16), 0},
    {"sm90_64x32m16t", BC_K_RESIDENT_SM90_64X32M16, BC_RESIDENT_SMEM_OF(BC_SM90_CFG_64X32M16), 0},
    {"sm90_128x64", BC_K_RESIDENT_SM90_128X64, BC_RESIDENT_SMEM_OF(BC_SM90_CFG_128X64), 1},
    {"sm90_128x64t", BC_K_RESIDENT_SM90_128X64, BC_RESIDENT_SMEM_OF(BC_SM90_CFG_128X64), 1},
    {"sm90_128x128", BC_K_RESIDENT_SM90_128X128, BC_RESIDENT_SMEM_OF(BC_SM90_CFG_128X128), 0},
    {"sm90_gemv", BC_K_RESIDENT_SM90_64X32M16, BC_RESIDENT_SMEM_OF(BC_SM90_CFG_64X32M16), 1},
};
#define KERNEL_COUNT (sizeof kernels / sizeof kernels[0])
#define GEMV_ENTRY (KERNEL_COUNT - 1u) /* sm90_gemv's, listed last */

int bc__resident_runs(const char *config)
{
    for (size_t k = 0; k < KERNEL_COUNT; k++)
        if (strcmp(kernels[k].config, config) == 0)
            return 1;
    return 0;
}

/* A byte range [lo, hi). */
typedef struct span {
    uint64_t lo, hi;
} span;

/* What one operation reads (up to A, B, C, bias) and writes. */
typedef struct access {
    span rd[4];
    int nrd;
    span wr;
} access;

static int overlap(span a, span b) { return a.lo < b.hi && b.lo < a.hi; }

/* 1 if running j in the same phase as i could change what either computes:
 * one writes what the other reads or writes. */
static int conflict(const access *i, const access *j)
{
    if (overlap(i->wr, j->wr))
        return 1;
    for (int r = 0; r < j->nrd; r++)
        if (overlap(i->wr, j->rd[r]))
            return 1;
    for (int r = 0; r < i->nrd; r++)
        if (overlap(j->wr, i->rd[r]))
            return 1;
    return 0;
}


/* The bytes of a rows x cols matrix with `ld` elements between rows (the
 * plan has checked that this does not overflow). */
static span matrix(uint64_t p, int64_t rows, int64_t cols, int64_t ld, uint64_t es)
{
    span s = {p, p + ((uint64_t)(rows - 1) * (uint64_t)ld + (uint64_t)cols) * es};
    return s;
}

/* What a plan reads and writes, from the caller's description; rd[1] is
 * what the kernel reads as B (b_untouched), which for a plan that runs
 * transposed (N = 1: D^T = B . A^T) is the caller's A. */
static access plan_access(const bc_gemm_desc *d, int swapped)
{
    access a;
    memset(&a, 0, sizeof a);
    const span sa = matrix(d->a, d->m, d->k, d->lda, 2), sb = matrix(d->b, d->n, d->k, d->ldb, 2);
    a.rd[a.nrd++] = swapped ? sb : sa;
    a.rd[a.nrd++] = swapped ? sa : sb;
    if (d->beta != 0.0f)
        a.rd[a.nrd++] = matrix(d->c, d->m, d->n, d->ldc, bc__dtype_bytes(d->d_type));
    if (d->bias)
        a.rd[a.nrd++] = matrix(d->bias, 1, d->n, d->n, bc__dtype_bytes(d->d_type));
    a.wr = matrix(d->d, d->m, d->n, d->ldd, bc__dtype_bytes(d->d_type));
    return a;
}

/* A plan as the kernel needs it: its tensor maps (A's and B's with whole
 * boxes, where the plan runs a multicast twin) and the parameters of its tile
 * walk and epilogue; for a GEMV plan, its operands and grid instead of the
 * maps and the tiles. */
static bc_status gemm_op(bc_resident_op *op, const bc_gemm_plan *pl)
{
    const bc_gemm_params *p = &pl->params;
    const int gemv = pl->config->gemv_max_q != 0;
    memset(op, 0, sizeof *op);
    if (gemv) {
        const bc_resident_gemv g = {p->a, p->b, p->lda, p->ldb, p->k, 0};
        memcpy(op->tmap_a, &g, sizeof g);
    } else {
        bc_status st = bc__gemm_plan_whole_maps(pl, op->tmap_a, op->tmap_b);
        if (st)
            return st;
        memcpy(op->tmap_d, p->tmap_d, sizeof op->tmap_d);
        memcpy(op->tmap_c, p->tmap_c, sizeof op->tmap_c);
    }
    bc_resident_opinfo *x = &op->x;
    x->d = p->d, x->c = p->c, x->bias = p->bias;
    x->m = p->m, x->n = p->n, x->ldd = p->ldd, x->ldc = p->ldc;
    x->alpha = p->alpha, x->beta = p->beta;
    x->flags = p->flags, x->ab_type = p->ab_type, x->d_type = p->d_type;
    x->tiles_m = p->tiles_m, x->tiles_n = p->tiles_n, x->k_blocks = p->k_blocks, x->group_m = p->group_m;
    x->kind = gemv ? BC_RESIDENT_OP_GEMV : BC_RESIDENT_OP_GEMM;
    if (gemv) /* runs of rows, split K ways: the launched grid */
        x->tiles_n = 1, x->k_blocks = 0, x->group_m = 1;
    x->split = (uint8_t)p->split_k;
    return BC_OK;
}

/* A plan the resident kernels can run: sm_90a, a configuration with a
 * resident kernel, of this device; *out_kernel its entry of kernels[]. */
static bc_status check_plan(bc_device *dev, const bc_gemm_plan *pl, int i, uint32_t *out_kernel)
{
    if (pl == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "plans", "plans[%d] is NULL", i);
    if (pl->dev != dev)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "plans", "plans[%d] was made on another device", i);
    const bc__gemm_config *c = pl->config;
    if (pl->params.sk_ctas)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "plans",
                       "plans[%d] takes its last round by stream-K, which the resident kernels do not run: "
                       "create it with bc_gemm_desc.stream_k = 0", i);
    uint32_t k = 0;
    while (k < KERNEL_COUNT && strcmp(kernels[k].config, c->name) != 0)
        k++;
    if (k == KERNEL_COUNT && c->dot_max_out)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "plans",
                       "plans[%d] uses %s (at most %u rows on one side), which has no resident kernel: create "
                       "it with bc_gemm_desc.resident = 1 (the rule then takes a configuration a resident kernel "
                       "runs) or pin bc_gemm_desc.config (the network's tiles, sm90_64x32m16 for M <= 16; or "
                       "sm90_gemv, which runs alone or beside sm90_128x64 plans)",
                       i, c->name, (unsigned)BC_DOT_MAX_Q);
    if (k == KERNEL_COUNT)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "plans",
                       "plans[%d] uses %s, which has no resident kernel (sm90_64x32, sm90_64x32s, "
                       "sm90_64x32t, sm90_64x32m16, sm90_64x32m16s, sm90_64x32m16t, sm90_gemv, sm90_128x64, "
                       "sm90_128x64t and sm90_128x128 do)",
                       i, c->name);
    *out_kernel = k;
    return BC_OK;
}

/* Whether plans[i] (kernels[] entry k) runs in the executor's kernel: the
 * first tile plan's (plans[first], entry k0; first -1 while none has come),
 * which runs every other tile plan of its kernel, and the GEMV plans
 * (plans[gemv] the first of them, or -1) where it runs them. */
static bc_status fits_kernel(const bc_gemm_plan *const *plans, int i, uint32_t k, int first, uint32_t k0, int gemv)
{
    static const char beside[] = "GEMV plans run in an executor alone or beside sm90_128x64 and sm90_128x64t "
                                 "plans only: pin bc_gemm_desc.config of the GEMV plans to the tile plans' "
                                 "configuration, or of the tile plans to sm90_gemv or sm90_128x64";
    if (k == GEMV_ENTRY) {
        if (first >= 0 && !kernels[k0].with_gemv)
            return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "plans", "plans[%d] uses sm90_gemv, plans[%d] %s: %s", i, first,
                           plans[first]->config->name, beside);
        return BC_OK;
    }
    if (first < 0) {
        if (gemv >= 0 && !kernels[k].with_gemv)
            return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "plans", "plans[%d] uses %s, plans[%d] sm90_gemv: %s", i,
                           plans[i]->config->name, gemv, beside);
        return BC_OK;
    }
    if (kernels[k].kernel != kernels[k0].kernel)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "plans",
                       "plans[%d] uses %s, plans[%d] %s: every tile plan of an executor runs in one resident kernel "
                       "(pin bc_gemm_desc.config; sm90_64x32, sm90_64x32s and sm90_64x32t share one, as do "
                       "sm90_64x32m16, sm90_64x32m16s and sm90_64x32m16t, and sm90_128x64 and sm90_128x64t)",
                       i, plans[i]->config->name, first, plans[first]->config->name);
    return BC_OK;
}

/* One copy: both sides given, alignment, a host side inside one live block
 * of the device's pinned pool (mapped into the device's address space), a
 * device side this device's kernels can address, its bytes inside one
 * block or allocation, and the two sides apart (the pieces are copied by
 * every thread at once, so an overlap would make the bytes depend on
 * timing). */
static bc_status copy_op(bc_device *dev, const bc_resident_copy *cp, const char *what, uint32_t i, int to_host,
                         bc_resident_op *op, access *acc)
{
    const uint64_t h = (uint64_t)(uintptr_t)cp->host, lo = (uint64_t)(uintptr_t)dev->host_arena;
    if (cp->host == NULL || cp->dev == 0)
        return BC_FAIL(BC_ERR_NULL_POINTER, what, "%s[%u]: host %p, device 0x%llx: both sides are needed", what, i,
                       cp->host, (unsigned long long)cp->dev);
    if (cp->bytes == 0)
        return BC_FAIL(BC_ERR_BAD_SIZE, what, "%s[%u]: 0 bytes", what, i);
    if (cp->bytes < 16 || cp->bytes % 16 || h % 16 || cp->dev % 16)
        return BC_FAIL(BC_ERR_MISALIGNED, what,
                       "%s[%u]: host %p, device 0x%llx, %zu bytes: both 16-byte aligned, a multiple of 16 bytes",
                       what, i, cp->host, (unsigned long long)cp->dev, cp->bytes);
    if (dev->host_pool == NULL || h < lo || h - lo > dev->cfg.host_arena_bytes ||
        cp->bytes > dev->cfg.host_arena_bytes - (h - lo))
        return BC_FAIL(BC_ERR_WRONG_DEVICE, what, "%s[%u]: host %p (%zu bytes) is not inside the device's pinned pool",
                       what, i, cp->host, cp->bytes);
    /* each side within one live block or allocation, as a plan's operands (bc__ptr_check): a wrong size or a
     * stale pointer is refused here rather than faulting the GPU at the first step */
    bc_status st = bc__ptr_check(dev, what, h, cp->bytes, to_host ? BC__ACC_WRITE : BC__ACC_READ, NULL);
    if (!st)
        st = bc__ptr_check(dev, what, cp->dev, cp->bytes, to_host ? BC__ACC_READ : BC__ACC_WRITE, NULL);
    if (st)
        return st;
    CUdeviceptr mapped = 0;
    st = BC_CU(cuMemHostGetDevicePointer, &mapped, cp->host, 0);
    if (st)
        return st;
    const span hs = {(uint64_t)mapped, (uint64_t)mapped + cp->bytes}, ds = {cp->dev, cp->dev + cp->bytes};
    const span hh = {h, h + cp->bytes}; /* the host address, where it differs from the mapped one */
    if (overlap(hs, ds) || overlap(hh, ds))
        return BC_FAIL(BC_ERR_OVERLAP, what, "%s[%u]: host %p and device 0x%llx overlap (%zu bytes)", what, i,
                       cp->host, (unsigned long long)cp->dev, cp->bytes);
    memset(op, 0, sizeof *op);
    op->x.kind = BC_RESIDENT_OP_COPY;
    op->x.d = to_host ? (uint64_t)mapped : cp->dev;
    op->x.c = to_host ? cp->dev : (uint64_t)mapped;
    op->x.bias = cp->bytes;
    memset(acc, 0, sizeof *acc);
    acc->rd[acc->nrd++] = to_host ? ds : hs;
    acc->wr = to_host ? hs : ds;
    return BC_OK;
}

/* 1 if no operation of [i0, i1) writes what GEMM j's kernel reads as B. */
static int b_untouched(const access *acc, uint32_t i0, uint32_t i1, uint32_t j)
{
    for (uint32_t i = i0; i < i1; i++)
        if (overlap(acc[i].wr, acc[j].rd[1]))
            return 0;
    return 1;
}

/* Flags each operation that conflicts with one of its phase (since the
 * last barrier), lays out each phase's work-item list, and lets a phase's
 * GEMMs load B before the barrier when the phase before does not write it. */
static void place_barriers(bc__resident_prog *p, const access *acc)
{
    uint32_t start = 0;
    for (uint32_t j = 1; j < p->count; j++)
        for (uint32_t i = start; i < j; i++)
            if (conflict(&acc[i], &acc[j])) {
                p->ops[j].x.barrier = 1;
                p->barriers++;
                start = j;
                break;
            }
    for (uint32_t j0 = 0, j1, prev = 0; j0 < p->count; prev = j0, j0 = j1) {
        uint32_t items = 0;
        for (j1 = j0; j1 < p->count && (j1 == j0 || !p->ops[j1].x.barrier); j1++)
            if (p->ops[j1].x.kind != BC_RESIDENT_OP_COPY) {
                bc_resident_opinfo *x = &p->ops[j1].x;
                x->tile0 = items;
                items += x->tiles_m * x->tiles_n * x->split;
            }
        for (uint32_t j = j0; j < j1; j++) {
            p->ops[j].x.phase_tiles = items;
            p->ops[j].x.prefetch_b = j0 > 0 && p->ops[j].x.kind == BC_RESIDENT_OP_GEMM && b_untouched(acc, prev, j0, j);
        }
        if (items > p->max_tiles)
            p->max_tiles = items;
    }
}

/* The bytes of a split GEMM's partial slots, one per work item
 * (tile_slot bytes a tile's, BC_RESIDENT_GEMV_SLOT_BYTES a GEMV run's). */
static uint64_t item_slots(const bc_resident_opinfo *x, uint64_t tile_slot)
{
    return (uint64_t)x->tiles_m * x->tiles_n * x->split *
           (x->kind == BC_RESIDENT_OP_GEMV ? BC_RESIDENT_GEMV_SLOT_BYTES : tile_slot);
}

/* The split-K GEMMs' arrival counters (one per tile, or per run of a GEMV
 * plan, after the sync block's fixed words) and partial slots (after the
 * counters): the sizes, counted first and bounded, then where each GEMM's
 * start. */
static bc_status place_partials(bc__resident_prog *p, uint64_t tile_slot)
{
    uint64_t counters = 0, ws = 0;
    for (uint32_t j = 0; j < p->count; j++) {
        const bc_resident_opinfo *x = &p->ops[j].x;
        if (x->kind != BC_RESIDENT_OP_COPY && x->split > 1) {
            counters += (uint64_t)x->tiles_m * x->tiles_n;
            ws += item_slots(x, tile_slot);
        }
    }
    p->sync_bytes = BC_RESIDENT_SYNC_CTR + (uint32_t)((counters * 4u + 255u) & ~(uint64_t)255u);
    p->ws_bytes = ws;
    if (p->sync_bytes + p->ws_bytes > UINT32_MAX)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "plans",
                       "the split-K plans' partials take %llu bytes: the executor holds at most 4 GiB of them",
                       (unsigned long long)p->ws_bytes);
    counters = 0, ws = p->sync_bytes;
    for (uint32_t j = 0; j < p->count; j++) {
        bc_resident_opinfo *x = &p->ops[j].x;
        if (x->kind == BC_RESIDENT_OP_COPY || x->split <= 1)
            continue;
        x->ctr0 = (uint32_t)counters;
        x->ws_off = (uint32_t)ws;
        counters += (uint64_t)x->tiles_m * x->tiles_n;
        ws += item_slots(x, tile_slot);
    }
    return BC_OK;
}

bc_status bc__resident_build(bc_device *dev, const bc_gemm_plan *const *plans, int count, const bc_resident_config *cfg,
                             bc__resident_prog *out)
{
    const uint64_t total = (uint64_t)cfg->input_count + cfg->output_count + (count > 0 ? (uint64_t)count : 0);
    if (plans == NULL || count < 1 || total > BC_RESIDENT_MAX_OPS)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "count",
                       "%d plans, %u inputs, %u outputs: 1..%d plans and at most %d operations in all", count,
                       cfg->input_count, cfg->output_count, BC_RESIDENT_MAX_OPS, BC_RESIDENT_MAX_OPS);
    if ((cfg->input_count && cfg->inputs == NULL) || (cfg->output_count && cfg->outputs == NULL))
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "cfg", "input_count or output_count set with a NULL array");
    memset(out, 0, sizeof *out);
    access acc[BC_RESIDENT_MAX_OPS];
    uint32_t k = 0, k0 = GEMV_ENTRY; /* the executor's kernel: the first tile plan's, else the GEMV plans' */
    int first = -1, gemv = -1;
    bc_status st = BC_OK;
    for (uint32_t i = 0; i < cfg->input_count && !st; i++, out->count++) {
        st = copy_op(dev, &cfg->inputs[i], "inputs", i, 0, &out->ops[out->count], &acc[out->count]);
        /* a device side outside the device arena may be host memory (registered or mapped): released at
         * system scope, as a plan's D there */
        if (!st) {
            const span w = acc[out->count].wr;
            if (!bc__tlsf_contains(dev->dev_pool, w.lo) || !bc__tlsf_contains(dev->dev_pool, w.hi - 1))
                out->sys_release = 1;
        }
    }
    for (int i = 0; i < count && !st; i++, out->count++) {
        st = check_plan(dev, plans[i], i, &k);
        if (!st)
            st = fits_kernel(plans, i, k, first, k0, gemv);
        if (!st && k == GEMV_ENTRY && gemv < 0)
            gemv = i;
        if (!st && k != GEMV_ENTRY && first < 0)
            first = i, k0 = k;
        if (!st)
            st = gemm_op(&out->ops[out->count], plans[i]);
        if (!st) {
            acc[out->count] = plan_access(&plans[i]->desc, plans[i]->swapped);
            /* a D outside the device arena may be host memory (the pinned pool, a registered or mapped
             * range): the arrivals are then released at system scope, as for an output copy, so the host
             * sees the bytes once it sees the step complete */
            const span w = acc[out->count].wr;
            if (!bc__tlsf_contains(dev->dev_pool, w.lo) || !bc__tlsf_contains(dev->dev_pool, w.hi - 1))
                out->sys_release = 1;
        }
    }
    for (uint32_t i = 0; i < cfg->output_count && !st; i++, out->count++) {
        st = copy_op(dev, &cfg->outputs[i], "outputs", i, 1, &out->ops[out->count], &acc[out->count]);
        out->sys_release = 1;
    }
    if (st)
        return st;
    out->fn = dev->image.fn[kernels[k0].kernel];
    if (out->fn == NULL)
        return BC_FAIL(BC_ERR_NO_KERNEL_FOR_DEVICE, "config", "the resident kernel for %s is not loaded: %s",
                       kernels[k0].config, bc__image_group_missing(dev, BC_KERNELS_RESIDENT));
    out->plans = (uint32_t)count;
    for (uint32_t i = 0; i <= k0 && !out->config; i++) /* the whole-tile name, listed first */
        if (kernels[i].kernel == kernels[k0].kernel)
            out->config = kernels[i].config;
    /* the tile plans' threads; with GEMV plans alone, 64x32m16's (its resident kernel's) */
    out->threads = first >= 0 ? plans[first]->config->threads : BC_SM90_THREADS_OF(BC_SM90_CFG_64X32M16);
    out->smem = kernels[k0].smem;
    st = place_partials(out, first >= 0 ? (uint64_t)plans[first]->config->a_rows * plans[first]->config->bn * 4u : 0u);
    if (!st) /* the work items counted in 32 bits: place_partials has bounded the split ones */
        place_barriers(out, acc);
    return st;
}
