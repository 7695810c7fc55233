/* A host model of the Blackwell GEMM's synchronisation (sm100_model.c).
 *
 * It runs the kernel's own role functions (kernels_ptx/sm100_pipe.h: the
 * TMA producer, the MMA lane and the four epilogue warps) as coroutines on
 * the CPU, with the operations they call implemented as a simulation:
 * mbarriers (arrival counts, expect_tx / complete_tx byte counts, phases,
 * try_wait.parity), TMA loads that land later and in any order, tcgen05.mma
 * that completes later in issue order, and tcgen05.commit that arrives once
 * the MMAs before it have completed. A seeded scheduler picks, at every
 * operation, which role runs or which asynchronous completion happens next.
 *
 * Checks, for every CTA of the persistent grid:
 *   - no role waits forever (deadlock: nothing can run, roles unfinished);
 *   - no TMA load overwrites a stage before the MMAs reading it completed,
 *     and no MMA reads a stage that does not hold the expected, landed data;
 *   - no MMA overwrites an accumulator buffer before all four epilogue
 *     warps released it, k-blocks accumulate in increasing order, and no
 *     epilogue warp reads a buffer before the commit of its last MMAs;
 *   - the tcgen05 fences of the hand-offs (after a wait, before an arrive);
 *   - no barrier gets more arrivals or bytes than announced;
 *   - nothing is in flight when the roles finish (no commit lands after exit);
 * and over the grid: every tile read once by each epilogue warp, with the
 * epilogue's column chunks covering the tile up to the N edge.
 */
#ifndef BC_TESTS_SM100_MODEL_H
#define BC_TESTS_SM100_MODEL_H

#include <stdint.h>

/* Mutations of the model's operations, to show the checker is not vacuous. */
enum {
    SM100_MUT_NONE = 0,
    SM100_MUT_DROP_ACC_RELEASE,   /* one epilogue warp never arrives on tmem_empty */
    SM100_MUT_DROP_STAGE_RELEASE, /* the MMA lane's commits to empty[] are lost */
};

typedef struct sm100_model_cfg {
    uint32_t m, n, k; /* GEMM shape: tiles of 128 x 256, k-blocks of 64 */
    uint32_t group_m; /* tile raster band (tile_sched.h) */
    uint32_t ctas;    /* persistent grid size */
    int mutant;       /* SM100_MUT_* */
} sm100_model_cfg;

typedef struct sm100_model_result {
    int failed;
    uint32_t cta;      /* the CTA that failed */
    uint64_t steps;    /* scheduler steps, all CTAs */
    char msg[4096];    /* the first failure and the state at that point */
} sm100_model_result;

/* Runs every CTA of the grid under the interleaving that `seed` chooses. */
void sm100_model_run(const sm100_model_cfg *cfg, uint64_t seed, sm100_model_result *out);

#endif
