/* Shape lists for the bench command (see shapes.h). */
#include <errno.h>
#include <stdlib.h>

#include "shapes.h"

const bc_shape bc_shapes_default[] = {
    {8192, 8192, 8192}, {6144, 6144, 6144}, {4096, 4096, 4096}, {4096, 4096, 1024}, {2048, 2048, 2048},
    {1024, 1024, 1024}, {512, 4096, 4096},  {256, 4096, 4096},  {128, 2048, 2048},  {64, 1024, 1024},
    {16, 4096, 4096},   {4096, 14336, 4096}, {4096, 4096, 14336},
};
const int bc_shapes_default_count = (int)(sizeof bc_shapes_default / sizeof bc_shapes_default[0]);

/* One decimal dimension at *p, advancing it; -1 when missing or out of range. */
static int64_t dim(const char **p)
{
    if (**p < '0' || **p > '9')
        return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(*p, &end, 10);
    if (errno != 0 || v < 1 || v > 2147483647LL)
        return -1;
    *p = end;
    return v;
}

int bc_shapes_parse(const char *s, bc_shape *out, int cap)
{
    if (s == NULL || out == NULL || cap < 1)
        return -1;
    int count = 0;
    const char *p = s;
    for (;;) {
        bc_shape sh;
        if ((sh.m = dim(&p)) < 0 || *p++ != 'x' || (sh.n = dim(&p)) < 0 || *p++ != 'x' || (sh.k = dim(&p)) < 0)
            return -1;
        if (count == cap)
            return -1;
        out[count++] = sh;
        if (*p == '\0')
            return count;
        if (*p++ != ',')
            return -1;
    }
}

int bc_bench_sets(uint64_t bytes_per_set)
{
    const uint64_t budget = 400ull << 20;
    uint64_t sets = budget / (bytes_per_set ? bytes_per_set : 1);
    return sets > 8 ? 8 : sets < 2 ? 2 : (int)sets;
}

uint64_t bc_shape_bytes(const bc_shape *s, unsigned in_bytes, unsigned out_bytes)
{
    return (uint64_t)(s->m * s->k + s->n * s->k) * in_bytes + (uint64_t)(s->m * s->n) * out_bytes;
}
