/* Fake driver core: state, accounting, fault injection, configuration,
 * reset and the table. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_internal.h"

fake_state fake__s;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bc__driver table;
static int table_filled;

static const char *const entry_names[FAKE_ENTRY_COUNT] = {
#define X(name, ver) #name,
#include "driver_list.h"
#undef X
};

static _Thread_local int inside; /* this thread holds the lock */

void fake__lock(void)
{
    pthread_mutex_lock(&lock);
    inside++;
}

void fake__unlock(void)
{
    inside--;
    pthread_mutex_unlock(&lock);
}

int fake_in_driver(void) { return inside > 0; }

/* ---------------------------------------------------------------- objects */

void fake__link(int kind, fake_obj *o)
{
    fake_obj *head = &fake__s.live[kind];
    o->prev = head->prev;
    o->next = head;
    head->prev->next = o;
    head->prev = o;
}

void fake__unlink(fake_obj *o)
{
    o->prev->next = o->next;
    o->next->prev = o->prev;
    o->prev = o->next = o;
}

int fake__find(int kind, const void *h)
{
    if (h == NULL)
        return 0;
    const fake_obj *head = &fake__s.live[kind];
    for (const fake_obj *o = head->next; o != head; o = o->next)
        if ((const void *)o == h)
            return 1;
    return 0;
}

int fake__count(int kind)
{
    int n = 0;
    const fake_obj *head = &fake__s.live[kind];
    for (const fake_obj *o = head->next; o != head; o = o->next)
        n++;
    return n;
}

/* ------------------------------------------------------ entry and faults */

/* What a poisoned process still does (seen on an H100 after a kernel fault:
 * cuInit, device queries and cuCtxDestroy succeed; every context creation,
 * allocation, launch and wait returns the sticky error). */
static int poison_exempt(fake_entry e)
{
    switch (e) {
    case FAKE_E_cuDriverGetVersion:
    case FAKE_E_cuInit:
    case FAKE_E_cuGetErrorName:
    case FAKE_E_cuGetErrorString:
    case FAKE_E_cuDeviceGetCount:
    case FAKE_E_cuDeviceGet:
    case FAKE_E_cuDeviceGetName:
    case FAKE_E_cuDeviceGetAttribute:
    case FAKE_E_cuDeviceTotalMem:
    case FAKE_E_cuCtxGetCurrent:
    case FAKE_E_cuCtxSetCurrent:
    case FAKE_E_cuCtxDestroy:
    case FAKE_E_cuDevicePrimaryCtxRelease:
    case FAKE_E_cuDevicePrimaryCtxGetState:
    case FAKE_E_cuTensorMapEncodeTiled:
    case FAKE_E_cuTensorMapReplaceAddress:
        return 1;
    default:
        return 0;
    }
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void mark_busy(fake_busy *b, uint64_t end)
{
    if (b->gen != fake__s.kernel_gen || end > b->until_ns)
        b->until_ns = end;
    b->gen = fake__s.kernel_gen;
}

void fake__kernel_started(CUcontext c, struct CUstream_st *st)
{
    fake_state *s = &fake__s;
    if (s->fault_next_launch != CUDA_SUCCESS) {
        s->poison = s->fault_next_launch;
        s->fault_next_launch = CUDA_SUCCESS;
    }
    if (s->kernel_ns == 0)
        return;
    const uint64_t end = mono_ns() + s->kernel_ns;
    if (c != NULL)
        mark_busy(&c->busy, end);
    if (st != NULL)
        mark_busy(&st->busy, end);
}

int fake__busy(const fake_busy *b)
{
    return b != NULL && b->gen == fake__s.kernel_gen && b->until_ns > mono_ns();
}

void fake__wait_busy(const fake_busy *b)
{
    if (!fake__busy(b))
        return;
    const uint64_t left = b->until_ns - mono_ns();
    struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
    nanosleep(&ts, NULL);
}

void fake_poison(CUresult r)
{
    fake__lock();
    fake__s.poison = r;
    fake__unlock();
}

void fake_set_poison_on_sticky(int on) { fake__s.poison_on_sticky = on; }

void fake_fault_next_launch(CUresult r)
{
    fake__lock();
    fake__s.fault_next_launch = r;
    fake__unlock();
}

void fake_set_kernel_duration_ms(double ms)
{
    fake__lock();
    fake__s.kernel_ns = ms > 0 ? (uint64_t)(ms * 1e6) : 0;
    fake__unlock();
}

void fake_finish_kernels(void)
{
    fake__lock();
    fake__s.kernel_gen++;
    fake__unlock();
}

CUresult fake_poisoned(void) { return fake__s.poison; }

CUresult fake__enter(fake_entry e)
{
    fake__lock();
    fake_state *s = &fake__s;
    s->calls++;
    s->entry_calls[e]++;
    if (s->log_len == s->log_cap) {
        size_t cap = s->log_cap ? s->log_cap * 2 : 4096;
        unsigned char *p = realloc(s->log, cap);
        if (p != NULL) {
            s->log = p;
            s->log_cap = cap;
        }
    }
    if (s->log_len < s->log_cap)
        s->log[s->log_len++] = (unsigned char)e;

    int hit = 0;
    if (s->poison != CUDA_SUCCESS && !poison_exempt(e))
        return s->poison; /* not an injection: the process is poisoned */
    if (s->fault_mode == 1) {
        hit = s->calls == s->fault_at || (s->fault_persistent && s->calls > s->fault_at);
    } else if (s->fault_mode == 2 && (int)e == s->fault_entry) {
        s->fault_entry_seen++;
        hit = s->fault_entry_seen == s->fault_at ||
              (s->fault_persistent && s->fault_entry_seen > s->fault_at);
    }
    if (!hit)
        return CUDA_SUCCESS;
    if (s->failed_entry < 0)
        s->failed_entry = (int)e;
    s->injected++;
    if (bc__cu_is_sticky(s->fault_result)) {
        if (s->poison_on_sticky)
            s->poison = s->fault_result;
        fake__resident_end_context(NULL); /* a real context would be lost, its kernels with it */
    }
    return s->fault_result;
}


CUresult fake__leave(CUresult r)
{
    fake__unlock();
    return r;
}

void fake_fail_call(uint64_t n, CUresult r, int persistent)
{
    fake__lock();
    fake__s.fault_mode = 1;
    fake__s.fault_at = fake__s.calls + n;
    fake__s.fault_result = r;
    fake__s.fault_persistent = persistent;
    fake__unlock();
}

void fake_fail_entry(fake_entry e, uint64_t n, CUresult r, int persistent)
{
    fake__lock();
    fake__s.fault_mode = 2;
    fake__s.fault_entry = (int)e;
    fake__s.fault_entry_seen = 0;
    fake__s.fault_at = n;
    fake__s.fault_result = r;
    fake__s.fault_persistent = persistent;
    fake__unlock();
}

void fake_fail_clear(void)
{
    fake__lock();
    fake__s.fault_mode = 0;
    fake__unlock();
}

int fake_failed_entry(void) { return fake__s.failed_entry; }
uint64_t fake_injected(void) { return fake__s.injected; }

int fake_entry_is_release(fake_entry e)
{
    switch (e) {
    case FAKE_E_cuCtxDestroy:
    case FAKE_E_cuDevicePrimaryCtxRelease:
    case FAKE_E_cuMemFree:
    case FAKE_E_cuMemFreeHost:
    case FAKE_E_cuMemHostUnregister:
    case FAKE_E_cuStreamDestroy:
    case FAKE_E_cuEventDestroy:
    case FAKE_E_cuModuleUnload:
    case FAKE_E_cuGraphDestroy:
    case FAKE_E_cuGraphExecDestroy:
        return 1;
    default:
        return 0;
    }
}

/* ------------------------------------------------------------- accounting */

uint64_t fake_calls(void) { return fake__s.calls; }

uint64_t fake_entry_calls(fake_entry e)
{
    return (unsigned)e < FAKE_ENTRY_COUNT ? fake__s.entry_calls[e] : 0;
}

const char *fake_entry_name(fake_entry e)
{
    return (unsigned)e < FAKE_ENTRY_COUNT ? entry_names[e] : "?";
}

int fake_call_entry(uint64_t k)
{
    if (k == 0 || k > fake__s.log_len)
        return -1;
    return fake__s.log[k - 1];
}

void fake_live(fake_live_counts *out)
{
    fake__lock();
    memset(out, 0, sizeof *out);
    out->contexts = fake__count(K_CTX);
    for (int i = 0; i < fake__s.ndev; i++)
        out->primary_contexts += fake__s.dev[i].primary_refs > 0;
    out->allocations = fake__count(K_ALLOC);
    out->host_allocations = fake__count(K_HOST);
    out->streams = fake__count(K_STREAM);
    out->events = fake__count(K_EVENT);
    out->modules = fake__count(K_MODULE);
    out->graphs = fake__count(K_GRAPH);
    out->graph_execs = fake__count(K_EXEC);
    out->residents = fake__resident_live();
    fake__unlock();
}

int fake_live_objects(void)
{
    fake_live_counts c;
    fake_live(&c);
    return c.contexts + c.primary_contexts + c.allocations + c.host_allocations + c.streams +
           c.events + c.modules + c.graphs + c.graph_execs + c.residents;
}

const char *fake_live_string(void)
{
    static _Thread_local char buf[256];
    fake_live_counts c;
    fake_live(&c);
    const struct {
        const char *name;
        int n;
    } f[] = {{"contexts", c.contexts},       {"primary_contexts", c.primary_contexts},
             {"allocations", c.allocations}, {"host_allocations", c.host_allocations},
             {"streams", c.streams},         {"events", c.events},
             {"modules", c.modules},         {"graphs", c.graphs},
             {"graph_execs", c.graph_execs}, {"residents", c.residents}};
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].n && len < sizeof buf)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s=%d", len ? " " : "",
                                    f[i].name, f[i].n);
    if (len == 0)
        snprintf(buf, sizeof buf, "none");
    return buf;
}

/* ------------------------------------------------------------ configuration */

void fake_device_defaults(fake_device *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "Fake H100");
    out->cc_major = 9;
    out->cc_minor = 0;
    out->sm_count = 132;
    out->total_mem = (size_t)80 << 30;
    out->smem_optin = 232448;
    out->l2_bytes = 50 << 20;
    out->prio_least = 0;
    out->prio_greatest = -5;
}

void fake_set_devices(const fake_device *devs, int count)
{
    fake__lock();
    if (count < 0)
        count = 0;
    if (count > FAKE_MAX_DEVICES)
        count = FAKE_MAX_DEVICES;
    for (int i = 0; i < count; i++) {
        fake__s.dev[i].cfg = devs[i];
        memset(fake__s.dev[i].attr_set, 0, sizeof fake__s.dev[i].attr_set);
    }
    fake__s.ndev = count;
    fake__unlock();
}

void fake_set_device_attr(int ordinal, CUdevice_attribute attr, int value)
{
    if (ordinal < 0 || ordinal >= FAKE_MAX_DEVICES || (unsigned)attr >= CU_DEVICE_ATTRIBUTE_MAX)
        return;
    fake__lock();
    fake__s.dev[ordinal].attr_set[attr] = 1;
    fake__s.dev[ordinal].attr_val[attr] = value;
    fake__unlock();
}

void fake_set_driver_version(int version) { fake__s.driver_version = version; }
void fake_set_init_result(CUresult r) { fake__s.init_result = r; }

void fake_set_mem_limit(size_t device_bytes, size_t host_bytes)
{
    fake__s.mem_limit = device_bytes;
    fake__s.host_limit = host_bytes;
}

void fake_set_busy(int polls)
{
    fake__lock();
    fake__s.busy = polls < 0 ? FAKE_BUSY_FOREVER : polls;
    fake__unlock();
}

void fake_set_event_tick_ms(float ms) { fake__s.tick_ms = ms; }

void fake_set_param_size(size_t bytes)
{
    fake__s.param_size = bytes > FAKE_MAX_PARAM_BYTES ? FAKE_MAX_PARAM_BYTES : bytes;
}

void fake_module_fail_next(CUresult r, const char *log)
{
    fake__lock();
    fake__s.module_fail = r;
    snprintf(fake__s.module_log, sizeof fake__s.module_log, "%s", log ? log : "");
    fake__unlock();
}

void fake_set_next_image_size(size_t bytes) { fake__s.next_image_size = bytes; }

void fake_set_kernel_attr(const char *kernel, CUfunction_attribute attr, int value)
{
    fake__lock();
    if (fake__s.nkattr < FAKE_MAX_KERNEL_ATTRS && (unsigned)attr < CU_FUNC_ATTRIBUTE_MAX) {
        int i = fake__s.nkattr++;
        snprintf(fake__s.kattr[i].kernel, sizeof fake__s.kattr[i].kernel, "%s", kernel);
        fake__s.kattr[i].attr = attr;
        fake__s.kattr[i].value = value;
    }
    fake__unlock();
}

/* -------------------------------------------------------------- reset */

static void free_contexts(void)
{
    fake_obj *head = &fake__s.live[K_CTX];
    while (head->next != head) {
        fake_obj *o = head->next;
        fake__unlink(o);
        free(o);
    }
}

static const size_t offsets[] = {
#define X(name, ver) offsetof(bc__driver, name),
#include "driver_list.h"
#undef X
};

/* Every entry of driver_list.h must have a fake: a new entry without one
 * stops the tests at once instead of crashing somewhere later. */
static void check_table(void)
{
    for (size_t i = 0; i < FAKE_ENTRY_COUNT; i++) {
        void *fn;
        memcpy(&fn, (const char *)&table + offsets[i], sizeof fn);
        if (fn == NULL) {
            fprintf(stderr, "fake driver: no fake for %s (add one to tests/unit/fake_*.c)\n",
                    entry_names[i]);
            abort();
        }
    }
}

void fake_reset(void)
{
    fake__lock();
    for (int k = 0; k < K_COUNT; k++)
        if (fake__s.live[k].next == NULL)
            fake__s.live[k].next = fake__s.live[k].prev = &fake__s.live[k];
    fake__resident_reset(); /* first: the threads read memory freed below */
    fake__free_all_graphs();
    fake__free_all_modules();
    fake__free_all_mem();
    free_contexts();
    free(fake__s.log);
    memset(&fake__s, 0, sizeof fake__s);
    for (int k = 0; k < K_COUNT; k++)
        fake__s.live[k].next = fake__s.live[k].prev = &fake__s.live[k];
    fake_device_defaults(&fake__s.dev[0].cfg);
    fake__s.ndev = 1;
    for (int i = 0; i < FAKE_MAX_DEVICES; i++) {
        fake__s.dev[i].primary.device = i;
        fake__s.dev[i].primary.primary = 1;
    }
    fake__s.driver_version = 13000;
    fake__s.init_result = CUDA_SUCCESS;
    fake__s.tick_ms = 1.5f;
    fake__s.failed_entry = -1;
    fake__s.module_fail = CUDA_SUCCESS;
    fake__clear_current();
    fake__s.max_active_clusters = -1;
    fake__fill_core(&table); /* every reset: fake_drop_entry may have cleared one */
    fake__fill_mem(&table);
    fake__fill_module(&table);
    fake__fill_graph(&table);
    fake__fill_kernel(&table);
    if (!table_filled) {
        table_filled = 1;
        check_table();
    }
    fake__unlock();
}

const bc__driver *fake_table(void) { return &table; }

void fake_drop_entry(fake_entry e)
{
    if ((unsigned)e >= FAKE_ENTRY_COUNT)
        return;
    fake__lock();
    memset((char *)&table + offsets[e], 0, sizeof(void *));
    fake__unlock();
}

void fake_install(void)
{
    fake_reset();
    bc__driver_set_override(&table);
}

