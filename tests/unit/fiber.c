/* Coroutines for host tests: see fiber.h. */
#include "fiber.h"

#include <stdlib.h>
#include <string.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIB_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FIB_ASAN 1
#endif
#ifdef FIB_ASAN
#include <sanitizer/common_interface_defs.h>
#define ASAN_START(save, bottom, size) __sanitizer_start_switch_fiber(save, bottom, size)
#define ASAN_FINISH(save, bottom, size) __sanitizer_finish_switch_fiber(save, bottom, size)
#else
#define ASAN_START(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#define ASAN_FINISH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#endif

static fib *starting; /* makecontext passes no pointer portably: one thread, set just before the switch */

int fib_init(fib *f, fib_host *host, size_t stack_bytes)
{
    memset(f, 0, sizeof *f);
    f->host = host;
    f->stack_bytes = stack_bytes;
    f->stack = malloc(stack_bytes);
    return f->stack == NULL;
}

void fib_free(fib *f)
{
    free(f->stack);
    f->stack = NULL;
}

static void to_host(fib *f, int last)
{
    void *fake = NULL;
    fib_host *h = f->host;
    ASAN_START(last ? NULL : &fake, h->bottom, h->size);
    swapcontext(&f->uc, &h->uc);
    ASAN_FINISH(fake, &h->bottom, &h->size);
}

static void entry(void)
{
    fib *f = starting;
    ASAN_FINISH(NULL, &f->host->bottom, &f->host->size);
    f->fn(f->arg);
    f->done = 1;
    to_host(f, 1); /* never resumed again */
}

void fib_start(fib *f, void (*fn)(void *), void *arg)
{
    f->fn = fn, f->arg = arg, f->done = 0;
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = f->stack_bytes;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, entry, 0);
}

void fib_resume(fib *f)
{
    void *fake = NULL;
    starting = f;
    ASAN_START(&fake, f->stack, f->stack_bytes);
    swapcontext(&f->host->uc, &f->uc);
    ASAN_FINISH(fake, NULL, NULL);
}

void fib_yield(fib *f) { to_host(f, 0); }
