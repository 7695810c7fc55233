/* The resident executor's step hand-over and grid barrier (included by
 * resident_sm90.c, after its control block, phase plan and trace hooks):
 * thread 0 of each CTA waits for the doorbell (CTA 0) or the step word
 * CTA 0 hands on (the others), backing off while idle; a grid-wide barrier
 * between dependent phases; each CTA's arrival at the step's end, and
 * CTA 0's report to the host.
 *
 * The grid barrier is a counter that only grows (u64: never wraps): each
 * CTA's thread 0 adds 1 with release semantics and waits until it reaches
 * (barriers so far) x (grid size) with acquire semantics; the CTA's other
 * threads meet it at barrier 0 before and after, as the cooperative-groups
 * grid sync does (a CTA barrier, then one thread's gpu-scope release and
 * acquire). Data written by TMA stores is in the async proxy: each storing
 * thread waits for its bulk stores to complete (cp.async.bulk.wait_group 0,
 * not .read: the writes themselves) and issues fence.proxy.async.global
 * before its CTA arrives; after the barrier the producer thread issues
 * fence.proxy.async.global again before TMA loads read what other CTAs
 * wrote (PTX ISA, memory consistency model, "proxies": a generic release /
 * acquire pair orders async-proxy accesses only through proxy fences on
 * both sides; NVIDIA's tilus documents fence.proxy.async as required for
 * TMA writes followed by generic reads and generic writes followed by TMA
 * reads; public persistent Hopper kernels signal other CTAs after
 * wait_group 0, fence.proxy.async.global and a release, and fence again
 * after the acquire before their TMA loads). The fences stand only where
 * the async proxy is used: the stores' before an arrival that ends a phase
 * with tile GEMMs, the producer's after a barrier that opens one, before
 * early B loads where the last barrier opened none (res_load_b_early: B may
 * have been written before it) and at the start of a step of a program
 * that has one (GEMV items and copies load and store through the generic
 * proxy; a program of GEMV plans has no proxy fence: ~1 us off a step of
 * three, kernels_ptx/PERF_NOTES.md change 95).
 */

#define RES_SLEEP_MIN_NS 256u

/* Spins, then sleeps between polls, doubling the sleep up to max_ns. */
BC_DEVICE void res_backoff(uint64_t idle_since, uint32_t spin_ns, uint32_t max_ns, uint32_t *sleep_ns)
{
    if (bc_globaltimer_ns() - idle_since < spin_ns)
        return;
    bc_nanosleep(*sleep_ns);
    if (*sleep_ns < max_ns)
        *sleep_ns = *sleep_ns * 2u < max_ns ? *sleep_ns * 2u : max_ns;
}

/* Thread 0 of each CTA: waits for the next doorbell value. CTA 0 reads the
 * doorbell and hands it on; the others read the step word. */
BC_DEVICE void res_next_step(res_ctl_s *ctl, uint64_t doorbell, uint64_t sync, uint32_t spin_ns,
                              uint32_t max_sleep_ns)
{
    const uint64_t idle_since = ctl->idle_since;
    uint32_t sleep_ns = RES_SLEEP_MIN_NS;
    uint64_t v;
    if (bc_ctaid_x() == 0) {
        const uint64_t seen = ctl->seen;
        for (;;) {
            v = bc_ld_acquire_sys_u64(doorbell);
            if ((v & BC_RESIDENT_SEQ_MASK) != seen || (v & BC_RESIDENT_STOP))
                break;
            res_backoff(idle_since, spin_ns, max_sleep_ns, &sleep_ns);
        }
        bc_st_release_gpu_u64(sync + BC_RESIDENT_SYNC_STEP, v);
    } else {
        const uint64_t last = ctl->step_word;
        while ((v = bc_ld_acquire_gpu_u64(sync + BC_RESIDENT_SYNC_STEP)) == last)
            res_backoff(idle_since, spin_ns, max_sleep_ns, &sleep_ns);
        ctl->step_word = v;
    }
    ctl->word = v;
}

/* Before a CTA arrives: every storing thread's TMA stores are complete and
 * ordered before its generic accesses (then the CTA barrier). tma: the
 * phase just run had tile GEMMs (the stores since the last arrival are
 * theirs: a phase of GEMV items and copies stores through the generic
 * proxy only, and needs no proxy fence). */
BC_DEVICE void res_publish_stores(uint32_t tma, uint32_t tid)
{
    if (tma && tid >= BC_SM90_PRODUCER_THREADS && tid % 128u == 0) {
        bc_bulk_wait_all();
        bc_fence_proxy_async_global();
    }
    bc_syncthreads_divergent();
}

/* A grid-wide barrier (every thread of every CTA). pub: the phase before
 * it had tile GEMMs (res_publish_stores); acq: the phase after it has
 * (its TMA loads read what other CTAs wrote: a proxy fence after the
 * barrier; GEMV items and copies read through the generic proxy). */
BC_DEVICE void res_grid_sync(res_ctl_s *ctl, uint64_t sync, uint32_t tev, uint32_t pub, uint32_t acq, uint32_t tid)
{
    res_publish_stores(pub, tid);
    if (tid == 128u)
        RES_TRACE(sync, ctl->word, tev + 1u);
    if (tid == 0) {
        const uint64_t target = ++ctl->syncs * bc_nctaid_x();
        bc_red_release_gpu_add_u64(sync + BC_RESIDENT_SYNC_ARRIVE, 1);
        while (bc_ld_acquire_gpu_u64(sync + BC_RESIDENT_SYNC_ARRIVE) < target) {
        }
        RES_TRACE(sync, ctl->word, tev + 2u);
    }
    bc_syncthreads_divergent();
    if (tid == 0 && acq) {
        bc_fence_proxy_async_global(); /* the TMA loads below read what other CTAs wrote */
        RES_TRACE(sync, ctl->word, 31u);
    }
}

/* The step's end: every CTA arrives; CTA 0 waits for all of them and
 * reports the step complete to the host. tma: the last phase had tile
 * GEMMs (res_publish_stores). */
BC_DEVICE void res_finish_step(res_ctl_s *ctl, uint64_t sync, uint64_t done, uint32_t sys_release, uint32_t tma,
                               uint32_t tid)
{
    res_publish_stores(tma, tid);
    if (tid == 128u)
        RES_TRACE(sync, ctl->word, 26u);
    if (tid != 0)
        return;
    const uint64_t step = ctl->word & BC_RESIDENT_SEQ_MASK;
    const uint64_t target = ++ctl->syncs * bc_nctaid_x();
    if (sys_release) /* copies wrote host memory: make them visible to the host too */
        bc_red_release_sys_add_u64(sync + BC_RESIDENT_SYNC_ARRIVE, 1);
    else
        bc_red_release_gpu_add_u64(sync + BC_RESIDENT_SYNC_ARRIVE, 1);
    RES_TRACE(sync, step, 27u);
    if (bc_ctaid_x() == 0) {
        while (bc_ld_acquire_gpu_u64(sync + BC_RESIDENT_SYNC_ARRIVE) < target) {
        }
        RES_TRACE(sync, step, 28u);
        bc_st_release_sys_u64(done, step);
    }
    ctl->seen = step;
    ctl->idle_since = bc_globaltimer_ns();
}
