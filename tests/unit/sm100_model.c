/* The host model of the Blackwell GEMM's synchronisation: see sm100_model.h.
 *
 * The roles are the kernel's functions from kernels_ptx/sm100_pipe.h, run
 * as ucontext coroutines ("fibers"); every sm100_op_* below first yields to
 * the scheduler, which decides what happens next, then applies its effect
 * to the simulated barriers, stages and accumulator buffers, checking it.
 * One thread, no real concurrency: a seed fixes the whole interleaving.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fiber.h"
#include "sm100_model.h"
#include "sm100_pipe.h"

enum { R_PRODUCER, R_MMA, R_EPI0, NROLES = R_EPI0 + 4 };
enum { F_READY, F_BLOCKED, F_DONE };
enum { NBARS = 2 * BC_SM100_STAGES + 2 * BC_SM100_ACC_BUFS, MAXQ = 64 };
enum { E_TMA, E_MMA, E_COMMIT, NKINDS };
#define STACK_BYTES (64u << 10)
#define BARS 0x30400u /* where the kernel's barriers sit: after 4 stages of 48 KiB at 0x400 */
#define BOX_A_BYTES (BC_SM100_BK * BC_SM100_BM * 2u) /* the TMA boxes the plan encodes (16-bit elements) */
#define BOX_B_BYTES (BC_SM100_BK * BC_SM100_BN * 2u)

typedef struct model model;

struct sm100_env {
    model *m;
    int role;
};

typedef struct mbar {
    int init;
    uint32_t count, pending;
    int64_t tx;
    uint64_t phase; /* completed phases */
} mbar;

typedef struct stage {
    int filled, consumed, readers, landed[2];
    bc_tile tile;
    uint32_t kb;
} stage;

typedef struct accbuf {
    int busy; /* holds a tile not yet released by all four epilogue warps */
    uint32_t t, kb_issued, kb_done, read_mask, released_mask;
    int committed;
} accbuf;

typedef struct event {
    int kind;            /* E_TMA, E_MMA, E_COMMIT */
    uint32_t stage, buf; /* TMA, MMA */
    uint32_t which;      /* TMA: 0 = A, 1 = B */
    uint32_t bar;        /* TMA, commit */
} event;

typedef struct fiber {
    fib co;
    int state;
    uint32_t wait_bar, wait_parity;
    int fence_due, ld_due; /* a tcgen05 fence is owed after a wait / before an arrive */
    sm100_env env;
} fiber;

struct model {
    sm100_model_cfg cfg;
    sm100_sched sc;
    uint32_t cta;
    uint64_t rng, steps;
    uint32_t weight[NROLES + NKINDS];
    mbar bar[NBARS];
    stage st[BC_SM100_STAGES];
    accbuf acc[BC_SM100_ACC_BUFS];
    event tma[MAXQ], mq[MAXQ]; /* TMA loads in flight (any order); MMAs and commits in issue order */
    int ntma, nmq;
    fiber f[NROLES];
    fiber *cur;   /* the role running, if any */
    int in_event; /* an asynchronous completion is being applied */
    fib_host host;
    uint8_t *reads; /* per tile: bit w = epilogue warp w read it (all CTAs) */
    int failed;
    char *msg;
    size_t msg_len;
};

static const char *const role_name[NROLES] = {"producer", "mma", "epilogue warp 2", "epilogue warp 3",
                                              "epilogue warp 4", "epilogue warp 5"};

static uint64_t rnd(model *m)
{
    uint64_t z = (m->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__attribute__((format(printf, 2, 3))) static void say(model *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const size_t cap = sizeof ((sm100_model_result *)0)->msg;
    if (m->msg_len < cap) {
        int n = vsnprintf(m->msg + m->msg_len, cap - m->msg_len, fmt, ap);
        m->msg_len += n > 0 ? (size_t)n : 0;
    }
    va_end(ap);
}

/* Index of the barrier at `addr` in the kernel's map (sm100_pipe.h), or -1. */
static int bar_index(uint32_t addr)
{
    const uint32_t off = addr - BARS;
    return addr >= BARS && off % 8 == 0 && off / 8 < NBARS ? (int)(off / 8) : -1;
}

static void bar_name(uint32_t addr, char *out, size_t n)
{
    const int i = bar_index(addr), s = BC_SM100_STAGES, b = BC_SM100_ACC_BUFS;
    if (i < 0)
        snprintf(out, n, "0x%x (no barrier)", addr);
    else if (i < 2 * s)
        snprintf(out, n, "%s[%d]", i < s ? "full" : "empty", i % s);
    else
        snprintf(out, n, "%s[%d]", i < 2 * s + b ? "tmem_full" : "tmem_empty", (i - 2 * s) % b);
}

static void dump(model *m)
{
    char nm[32];
    say(m, "\n  state of CTA %u (tiles %ux%u, %u k-blocks, grid %u):", m->cta, m->sc.tiles_m, m->sc.tiles_n,
        m->sc.k_blocks, m->cfg.ctas);
    for (int r = 0; r < NROLES; r++) {
        const fiber *f = &m->f[r];
        bar_name(f->wait_bar, nm, sizeof nm);
        if (f->state == F_BLOCKED)
            say(m, "\n    %-16s waits on %s for parity %u", role_name[r], nm, f->wait_parity);
        else
            say(m, "\n    %-16s %s", role_name[r], f->state == F_DONE ? "finished" : "runnable");
    }
    for (int i = 0; i < NBARS; i++) {
        const mbar *b = &m->bar[i];
        bar_name(BARS + 8u * (uint32_t)i, nm, sizeof nm);
        say(m, "\n    %-13s phase %llu (parity %llu), %u of %u arrivals pending, tx %lld", nm,
            (unsigned long long)b->phase, (unsigned long long)(b->phase & 1), b->pending, b->count,
            (long long)b->tx);
    }
    say(m, "\n    in flight: %d TMA loads, %d MMAs/commits", m->ntma, m->nmq);
}

__attribute__((format(printf, 2, 3))) static void fail(model *m, const char *fmt, ...)
{
    if (m->failed)
        return;
    m->failed = 1;
    if (m->cta < m->cfg.ctas)
        say(m, "CTA %u, %s: ", m->cta,
            m->cur ? role_name[m->cur - m->f] : m->in_event ? "asynchronous completion" : "scheduler");
    else
        say(m, "grid: ");
    va_list ap;
    va_start(ap, fmt);
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    say(m, "%s", line);
    if (m->cta < m->cfg.ctas)
        dump(m);
}

/* Records the failure and leaves the (void) operation. */
#define FAIL_RETURN(...)     \
    do {                     \
        fail(__VA_ARGS__);   \
        return;              \
    } while (0)

/* ---------------------------------------------------------------- barriers */

static mbar *bar_of(model *m, uint32_t addr)
{
    const int i = bar_index(addr);
    if (i < 0 || !m->bar[i].init) {
        fail(m, "uses 0x%x, which is not an initialised barrier", addr);
        return NULL;
    }
    return &m->bar[i];
}

static void bar_settle(mbar *b)
{
    if (b->pending == 0 && b->tx == 0) {
        b->phase++;
        b->pending = b->count;
    }
}

static void bar_arrive(model *m, uint32_t addr, uint32_t n)
{
    mbar *b = bar_of(m, addr);
    if (b == NULL)
        return;
    char nm[32];
    bar_name(addr, nm, sizeof nm);
    if (b->pending < n) {
        fail(m, "%u arrivals on %s, which expects only %u more in this phase", n, nm, b->pending);
        return;
    }
    b->pending -= n;
    bar_settle(b);
}

static void bar_complete_tx(model *m, uint32_t addr, uint32_t bytes)
{
    mbar *b = bar_of(m, addr);
    if (b == NULL)
        return;
    b->tx -= bytes;
    if (b->tx < 0) {
        char nm[32];
        bar_name(addr, nm, sizeof nm);
        fail(m, "%u bytes landed on %s beyond what expect_tx announced", bytes, nm);
        return;
    }
    bar_settle(b);
}

static int bar_passes(model *m, uint32_t addr, uint32_t parity)
{
    const int i = bar_index(addr);
    return i >= 0 && m->bar[i].init && (m->bar[i].phase & 1) != (parity & 1);
}

/* ---------------------------------------------------------------- fibers and the scheduler */

/* Every operation starts here: the scheduler decides when it happens. */
static model *yield(sm100_env *v)
{
    fib_yield(&v->m->f[v->role].co);
    return v->m;
}

/* The epilogue warp's bit in read/release masks (0 for other roles). */
static uint32_t warp_bit(const sm100_env *v) { return v->role >= R_EPI0 ? 1u << (v->role - R_EPI0) : 0u; }

static void role_main(void *arg)
{
    fiber *f = arg;
    model *m = f->env.m;
    if (f->env.role == R_PRODUCER)
        sm100_producer_role(&f->env, &m->sc, BARS, m->cta, m->cfg.ctas);
    else if (f->env.role == R_MMA)
        sm100_mma_role(&f->env, &m->sc, BARS, m->cta, m->cfg.ctas);
    else
        sm100_epilogue_role(&f->env, &m->sc, BARS, m->cta, m->cfg.ctas);
    f->state = F_DONE;
}

/* ---------------------------------------------------------------- the operations of sm100_pipe.h */

BC_DEVICE void sm100_op_init(sm100_env *v, uint32_t bar, uint32_t count)
{
    model *m = v->m; /* before the roles start: no yield */
    const int i = bar_index(bar);
    if (i < 0 || m->bar[i].init || count == 0)
        fail(m, "bad mbarrier.init of 0x%x with count %u", bar, count);
    else
        m->bar[i] = (mbar){1, count, count, 0, 0};
}

BC_DEVICE void sm100_op_wait(sm100_env *v, uint32_t bar, uint32_t parity)
{
    model *m = v->m;
    fiber *f = &m->f[v->role];
    if (bar_of(m, bar) == NULL)
        return;
    f->state = F_BLOCKED, f->wait_bar = bar, f->wait_parity = parity;
    yield(v); /* resumed only once the phase of that parity has completed */
    f->state = F_READY;
    f->fence_due = 1;
}

BC_DEVICE void sm100_op_expect_arrive(sm100_env *v, uint32_t bar, uint32_t bytes)
{
    model *m = yield(v);
    mbar *b = bar_of(m, bar);
    if (b == NULL)
        return;
    b->tx += bytes;
    bar_arrive(m, bar, 1);
}

static void load(sm100_env *v, uint32_t which, uint32_t s, bc_tile tile, uint32_t kb, uint32_t bar)
{
    model *m = yield(v);
    stage *st = &m->st[s];
    if (which == 0) {
        if (st->readers || (st->filled && !st->consumed))
            FAIL_RETURN(m, "TMA load into stage %u overwrites tile (%u,%u) k-block %u before %s", s, st->tile.m,
                        st->tile.n, st->kb, st->readers ? "the MMAs reading it completed" : "any MMA read it");
        *st = (stage){1, 0, 0, {0, 0}, tile, kb};
    } else if (!st->filled || st->tile.m != tile.m || st->tile.n != tile.n || st->kb != kb) {
        FAIL_RETURN(m, "TMA load of B into stage %u without the matching load of A", s);
    }
    if (m->ntma == MAXQ)
        FAIL_RETURN(m, "more than %d TMA loads in flight", MAXQ);
    m->tma[m->ntma++] = (event){E_TMA, s, 0, which, bar};
}

BC_DEVICE void sm100_op_load_a(sm100_env *v, uint32_t s, bc_tile t, uint32_t kb, uint32_t bar)
{
    load(v, 0, s, t, kb, bar);
}

BC_DEVICE void sm100_op_load_b(sm100_env *v, uint32_t s, bc_tile t, uint32_t kb, uint32_t bar)
{
    load(v, 1, s, t, kb, bar);
}

BC_DEVICE void sm100_op_tc_after(sm100_env *v) { yield(v)->f[v->role].fence_due = 0; }
BC_DEVICE void sm100_op_tc_before(sm100_env *v) { yield(v)->f[v->role].ld_due = 0; }
BC_DEVICE void sm100_op_converge(sm100_env *v) { (void)yield(v); }

BC_DEVICE void sm100_op_mma(sm100_env *v, uint32_t s, uint32_t b, uint32_t kb, uint32_t t)
{
    model *m = yield(v);
    if (m->f[v->role].fence_due)
        FAIL_RETURN(m, "MMA issued after an mbarrier wait without tcgen05.fence::after_thread_sync");
    const bc_tile want = bc_tile_of(t, m->sc.tiles_m, m->sc.tiles_n, m->sc.group_m);
    stage *st = &m->st[s];
    if (!st->filled || st->tile.m != want.m || st->tile.n != want.n || st->kb != kb || !st->landed[0] ||
        !st->landed[1])
        FAIL_RETURN(m, "MMA for tile (%u,%u) k-block %u reads stage %u, which holds tile (%u,%u) k-block %u%s",
                    want.m, want.n, kb, s, st->tile.m, st->tile.n, st->kb,
                    st->filled && !(st->landed[0] && st->landed[1]) ? ", not yet landed" : "");
    accbuf *a = &m->acc[b];
    if (kb == 0) {
        if (a->busy)
            FAIL_RETURN(m, "MMA overwrites accumulator buffer %u (tile %u) before the epilogue released it "
                           "(warps read 0x%x, released 0x%x)", b, a->t, a->read_mask, a->released_mask);
        *a = (accbuf){1, t, 0, 0, 0, 0, 0};
    } else if (!a->busy || a->t != t || a->kb_issued != kb) {
        FAIL_RETURN(m, "MMA of tile %u k-block %u accumulates into buffer %u, which holds tile %u after %u k-blocks",
                    t, kb, b, a->t, a->kb_issued);
    }
    a->kb_issued++;
    st->readers++;
    if (m->nmq == MAXQ)
        FAIL_RETURN(m, "more than %d MMAs in flight", MAXQ);
    m->mq[m->nmq++] = (event){E_MMA, s, b, 0, 0};
}

BC_DEVICE void sm100_op_commit(sm100_env *v, uint32_t bar)
{
    model *m = yield(v);
    const int i = bar_index(bar);
    if (m->cfg.mutant == SM100_MUT_DROP_STAGE_RELEASE && i >= BC_SM100_STAGES && i < 2 * BC_SM100_STAGES)
        return; /* mutant: the stage is never handed back */
    if (bar_of(m, bar) == NULL)
        return;
    if (m->nmq == MAXQ)
        FAIL_RETURN(m, "more than %d MMAs in flight", MAXQ);
    m->mq[m->nmq++] = (event){E_COMMIT, 0, 0, 0, bar};
}

BC_DEVICE void sm100_op_drain(sm100_env *v, uint32_t b, bc_tile tile)
{
    model *m = yield(v);
    fiber *f = &m->f[v->role];
    const uint32_t w = warp_bit(v);
    if (w == 0)
        FAIL_RETURN(m, "only the epilogue warps read accumulators");
    if (f->fence_due)
        FAIL_RETURN(m, "tcgen05.ld after an mbarrier wait without tcgen05.fence::after_thread_sync");
    accbuf *a = &m->acc[b];
    const bc_tile at = bc_tile_of(a->t, m->sc.tiles_m, m->sc.tiles_n, m->sc.group_m);
    if (!a->busy || at.m != tile.m || at.n != tile.n || a->kb_done != m->sc.k_blocks || !a->committed ||
        (a->read_mask & w))
        FAIL_RETURN(m, "reads accumulator buffer %u for tile (%u,%u): it holds tile (%u,%u) with %u of %u k-blocks "
                       "done, %scommitted%s", b, tile.m, tile.n, at.m, at.n, a->kb_done, m->sc.k_blocks,
                    a->committed ? "" : "not ", (a->read_mask & w) ? ", already read by this warp" : "");
    a->read_mask |= w;
    f->ld_due = 1;
    /* the epilogue's column chunks reach the N edge and no further */
    const uint32_t col0 = tile.n * BC_SM100_BN, chunks = sm100_epi_chunks(m->cfg.n, col0);
    const uint32_t cols = m->cfg.n - col0 < BC_SM100_BN ? m->cfg.n - col0 : BC_SM100_BN;
    if (chunks * 32u < cols || (chunks - 1u) * 32u >= cols)
        FAIL_RETURN(m, "tile (%u,%u) has %u columns, the epilogue loads %u chunks of 32", tile.m, tile.n, cols,
                    chunks);
    uint8_t *r = &m->reads[tile.m * m->sc.tiles_n + tile.n];
    if (*r & w)
        FAIL_RETURN(m, "tile (%u,%u) is stored twice by this warp (grid walk)", tile.m, tile.n);
    *r |= (uint8_t)w;
}

BC_DEVICE void sm100_op_arrive(sm100_env *v, uint32_t bar)
{
    model *m = yield(v);
    fiber *f = &m->f[v->role];
    const int i = bar_index(bar);
    const uint32_t w = warp_bit(v);
    if (f->ld_due)
        FAIL_RETURN(m, "arrives after tcgen05.ld without tcgen05.fence::before_thread_sync");
    if (i >= 2 * BC_SM100_STAGES + BC_SM100_ACC_BUFS && i < NBARS) {
        if (m->cfg.mutant == SM100_MUT_DROP_ACC_RELEASE && v->role == R_EPI0 + 3)
            return; /* mutant: this warp never hands the buffer back */
        accbuf *a = &m->acc[i - (2 * BC_SM100_STAGES + BC_SM100_ACC_BUFS)];
        if (w == 0 || !(a->read_mask & w))
            FAIL_RETURN(m, "releases accumulator buffer %d without having read it", i % BC_SM100_ACC_BUFS);
        a->released_mask |= w;
        if (a->released_mask == 0xFu)
            a->busy = 0;
    }
    bar_arrive(m, bar, 32); /* the 32 lanes of the warp, together */
}

/* ---------------------------------------------------------------- asynchronous completions */

static void complete(model *m, int kind, int idx)
{
    if (kind == E_TMA) {
        const event e = m->tma[idx];
        m->tma[idx] = m->tma[--m->ntma];
        m->st[e.stage].landed[e.which] = 1;
        bar_complete_tx(m, e.bar, e.which ? BOX_B_BYTES : BOX_A_BYTES);
        return;
    }
    const event e = m->mq[idx];
    memmove(&m->mq[idx], &m->mq[idx + 1], (size_t)(m->nmq - idx - 1) * sizeof e);
    m->nmq--;
    if (kind == E_MMA) {
        m->st[e.stage].readers--;
        m->st[e.stage].consumed = 1;
        m->acc[e.buf].kb_done++;
        return;
    }
    const int i = bar_index(e.bar);
    if (i >= 2 * BC_SM100_STAGES && i < 2 * BC_SM100_STAGES + BC_SM100_ACC_BUFS) {
        accbuf *a = &m->acc[i - 2 * BC_SM100_STAGES];
        a->committed = a->busy && a->kb_done == a->kb_issued;
    }
    bar_arrive(m, e.bar, 1);
}

typedef struct cand {
    int kind; /* 0..NROLES-1: a role; else NROLES + E_*, with idx */
    int idx;
} cand;

/* One CTA from barrier init to the last role's return. */
static void run_cta(model *m)
{
    memset(m->bar, 0, sizeof m->bar);
    memset(m->st, 0, sizeof m->st);
    memset(m->acc, 0, sizeof m->acc);
    m->ntma = m->nmq = 0;
    for (int w = 0; w < NROLES + NKINDS; w++)
        m->weight[w] = 1u + (uint32_t)(rnd(m) % 16u);
    sm100_env init_env = {m, R_PRODUCER};
    sm100_init_barriers(&init_env, BARS);
    for (int r = 0; r < NROLES; r++) {
        fiber *f = &m->f[r];
        f->state = F_READY, f->wait_bar = 0, f->fence_due = f->ld_due = 0;
        f->env = (sm100_env){m, r};
        fib_start(&f->co, role_main, f);
    }
    cand c[NROLES + 2 * MAXQ];
    while (!m->failed) {
        int n = 0, live = 0;
        uint64_t total = 0;
        for (int r = 0; r < NROLES; r++) {
            const fiber *f = &m->f[r];
            live += f->state != F_DONE;
            if (f->state == F_READY || (f->state == F_BLOCKED && bar_passes(m, f->wait_bar, f->wait_parity)))
                c[n++] = (cand){r, 0}, total += m->weight[r];
        }
        for (int i = 0; i < m->ntma; i++)
            c[n++] = (cand){NROLES + E_TMA, i}, total += m->weight[NROLES + E_TMA];
        for (int i = 0; i < m->nmq; i++) { /* MMAs in order; a commit once no MMA precedes it */
            if (m->mq[i].kind == E_MMA) {
                c[n++] = (cand){NROLES + E_MMA, i}, total += m->weight[NROLES + E_MMA];
                break;
            }
            c[n++] = (cand){NROLES + E_COMMIT, i}, total += m->weight[NROLES + E_COMMIT];
        }
        if (n == 0) {
            if (live)
                fail(m, "deadlock: no role can run and nothing is in flight");
            break;
        }
        if (live == 0 && (m->ntma || m->nmq)) {
            fail(m, "every role finished with %d TMA loads and %d MMAs/commits in flight: they would land "
                    "after the CTA exits", m->ntma, m->nmq);
            break;
        }
        uint64_t pick = rnd(m) % total;
        int k = 0;
        while (pick >= m->weight[c[k].kind])
            pick -= m->weight[c[k].kind], k++;
        m->steps++;
        if (c[k].kind < NROLES) {
            m->cur = &m->f[c[k].kind];
            fib_resume(&m->cur->co);
            m->cur = NULL;
        }
        else {
            m->in_event = 1;
            complete(m, c[k].kind - NROLES, c[k].idx);
            m->in_event = 0;
        }
    }
    for (uint32_t b = 0; b < BC_SM100_ACC_BUFS && !m->failed; b++)
        if (m->acc[b].busy)
            fail(m, "accumulator buffer %u (tile %u) still held when the CTA exits", b, m->acc[b].t);
}

void sm100_model_run(const sm100_model_cfg *cfg, uint64_t seed, sm100_model_result *out)
{
    memset(out, 0, sizeof *out);
    model *m = calloc(1, sizeof *m);
    if (m == NULL) {
        out->failed = 1;
        snprintf(out->msg, sizeof out->msg, "out of memory");
        return;
    }
    m->cfg = *cfg;
    m->sc = (sm100_sched){(cfg->m + BC_SM100_BM - 1) / BC_SM100_BM, (cfg->n + BC_SM100_BN - 1) / BC_SM100_BN,
                          (cfg->k + BC_SM100_BK - 1) / BC_SM100_BK, cfg->group_m};
    m->msg = out->msg;
    const uint32_t tiles = m->sc.tiles_m * m->sc.tiles_n;
    m->reads = calloc(tiles, 1);
    int ok = m->reads != NULL;
    for (int r = 0; r < NROLES; r++)
        ok &= fib_init(&m->f[r].co, &m->host, STACK_BYTES) == 0;
    if (!ok)
        fail(m, "out of memory");
    for (m->cta = 0; m->cta < cfg->ctas && !m->failed; m->cta++) {
        m->rng = seed * 0x2545F4914F6CDD1Dull + m->cta;
        run_cta(m);
        if (m->failed)
            break;
    }
    for (uint32_t t = 0; t < tiles && !m->failed; t++)
        if (m->reads[t] != 0xF)
            fail(m, "tile (%u,%u) read by epilogue warps 0x%x of the grid, not all four once", t / m->sc.tiles_n,
                 t % m->sc.tiles_n, m->reads[t]);
    out->failed = m->failed;
    out->cta = m->failed ? m->cta : 0;
    out->steps = m->steps;
    for (int r = 0; r < NROLES; r++)
        fib_free(&m->f[r].co);
    free(m->reads);
    free(m);
}
