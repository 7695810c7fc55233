/* Heap accounting for the tests that check a path allocates nothing: the
 * test binary links with --wrap=malloc,calloc,realloc,aligned_alloc; while
 * `counting` is 1 every call adds to `heap_calls`. Include once per binary. */
#ifndef BC_TESTS_HEAP_COUNT_H
#define BC_TESTS_HEAP_COUNT_H

#include <stddef.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t al, size_t n);
static int counting;
static unsigned heap_calls;
void *__wrap_malloc(size_t n) { heap_calls += counting; return __real_malloc(n); }
void *__wrap_calloc(size_t a, size_t b) { heap_calls += counting; return __real_calloc(a, b); }
void *__wrap_realloc(void *p, size_t n) { heap_calls += counting; return __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t al, size_t n) { heap_calls += counting; return __real_aligned_alloc(al, n); }

#endif
