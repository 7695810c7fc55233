/* barecuda latency: the resident executor's series (see latency.h).
 *
 * One sample = t0 (clock_gettime) right before the step's first host call,
 * t1 when the host sees the step complete:
 *   resident           bc_resident_step (ring, then wait with the stream's
 *                      policy); input and output stay in device memory;
 *   resident-memcpy    bc_memcpy_htod of the input from pinned memory, the
 *                      step, bc_memcpy_dtoh of the output into pinned memory;
 *   resident-zerocopy  the step of the executor whose kernel copies the input
 *                      from pinned memory and the output back itself;
 * and, as the "launch call" of resident mode, bc_resident_ring alone. The
 * executor runs for the whole series (started before the warm-up runs,
 * stopped after the last sample): start and stop are not timed. */
#include <string.h>

#include "cli_util.h"
#include "latency.h"

#define TRY(call, expr)                                  \
    do {                                                 \
        bc_status st_ = (expr);                          \
        if (st_) {                                       \
            bc_cli_report_call("latency", call, st_);    \
            return st_;                                  \
        }                                                \
    } while (0)

bc_status lat_resident_create(bc_device *dev, const bc_gemm_plan *const *seq, int n, const bc_resident_config *cfg,
                              int io, lat_resident *r)
{
    r->dev = dev;
    TRY("bc_host_alloc", bc_host_alloc(dev, r->in_bytes, &r->host_in));
    TRY("bc_host_alloc", bc_host_alloc(dev, r->out_bytes, &r->host_out));
    TRY("bc_memcpy_dtoh", bc_memcpy_dtoh(dev, r->host_in, r->in, r->in_bytes));
    TRY("bc_resident_create", bc_resident_create(dev, seq, n, cfg, &r->exec));
    TRY("bc_resident_query", bc_resident_query(r->exec, &r->info));
    if (io) {
        bc_resident_config c = *cfg;
        const bc_resident_copy in = {r->host_in, r->in, r->in_bytes}, out = {r->host_out, r->out, r->out_bytes};
        c.inputs = &in, c.input_count = 1;
        c.outputs = &out, c.output_count = 1;
        TRY("bc_resident_create", bc_resident_create(dev, seq, n, &c, &r->zc));
    }
    return BC_OK;
}

bc_status lat_resident_once(lat_resident *r, bc_stream *st, int zc, uint64_t timeout)
{
    bc_resident *x = zc ? r->zc : r->exec;
    TRY("bc_resident_start", bc_resident_start(x, st));
    TRY("bc_resident_step", bc_resident_step(x, timeout));
    TRY("bc_resident_stop", bc_resident_stop(x, timeout));
    return BC_OK;
}

/* One sample of series s; *out_ns the time it took. */
static bc_status sample(lat_resident *r, bc_resident *x, const lat_series *s, uint64_t timeout, uint64_t *out_ns)
{
    const uint64_t t0 = bc_cli_now_ns();
    if (s->resident == LAT_RES_MEMCPY)
        TRY("bc_memcpy_htod", bc_memcpy_htod(r->dev, r->in, r->host_in, r->in_bytes));
    if (s->kind == LAT_LAUNCH) {
        TRY("bc_resident_ring", bc_resident_ring(x));
        *out_ns = bc_cli_now_ns() - t0;
        TRY("bc_resident_wait", bc_resident_wait(x, timeout));
        return BC_OK;
    }
    TRY("bc_resident_step", bc_resident_step(x, timeout));
    if (s->resident == LAT_RES_MEMCPY)
        TRY("bc_memcpy_dtoh", bc_memcpy_dtoh(r->dev, r->host_out, r->out, r->out_bytes));
    *out_ns = bc_cli_now_ns() - t0;
    return BC_OK;
}

bc_status lat_resident_measure(lat_resident *r, bc_stream *st, lat_series *s, int warmup, int runs, uint64_t timeout)
{
    bc_resident *x = s->resident == LAT_RES_ZEROCOPY ? r->zc : r->exec;
    TRY("bc_stream_set_wait_policy", bc_stream_set_wait_policy(st, s->wait));
    TRY("bc_stream_wait", bc_stream_wait(st, timeout));
    TRY("bc_resident_start", bc_resident_start(x, st));
    bc_status res = BC_OK;
    for (int i = -warmup; i < runs && !res; i++) {
        uint64_t ns = 0;
        res = sample(r, x, s, timeout, &ns);
        if (i >= 0)
            s->ns[i] = ns;
    }
    bc_status stop = bc_resident_stop(x, timeout);
    if (!res && stop)
        bc_cli_report_call("latency", "bc_resident_stop", stop);
    return res ? res : stop;
}
