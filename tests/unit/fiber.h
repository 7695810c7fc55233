/* Coroutines for host tests: several call stacks on one OS thread,
 * switched explicitly (ucontext), so a test decides every interleaving and
 * a seed reproduces it. The AddressSanitizer fiber annotations keep ASan
 * builds exact; its runtime still prints one warning that it does not
 * "fully support" swapcontext, which is expected. */
#ifndef BC_TESTS_FIBER_H
#define BC_TESTS_FIBER_H

#include <stddef.h>
#include <ucontext.h>

/* The scheduler's side: the context fib_resume returns to. */
typedef struct fib_host {
    ucontext_t uc;
    const void *bottom; /* its stack, for ASan */
    size_t size;
} fib_host;

typedef struct fib {
    ucontext_t uc;
    void *stack;
    size_t stack_bytes;
    fib_host *host;
    void (*fn)(void *);
    void *arg;
    int done; /* fn returned */
} fib;

/* Allocates the fiber's stack; 0 on success. */
int fib_init(fib *f, fib_host *host, size_t stack_bytes);
void fib_free(fib *f);

/* Makes the fiber run fn(arg) from the start at its next fib_resume. A
 * fiber abandoned half-way (never resumed again) may be restarted. */
void fib_start(fib *f, void (*fn)(void *), void *arg);

/* Host: runs the fiber until it yields or fn returns (then f->done). */
void fib_resume(fib *f);

/* Fiber: hands control back to the host; returns at the next fib_resume. */
void fib_yield(fib *f);

#endif
