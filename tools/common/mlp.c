/* A multilayer perceptron on a device (see mlp.h). */
#include "mlp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int bc_mlp_parse_list(const char *s, long long lo, long long hi, int max, long long *out)
{
    int n = 0;
    for (const char *p = s;; p++) {
        char *end = NULL;
        const long long v = strtoll(p, &end, 10);
        if (end == p || v < lo || v > hi || n == max)
            return -1;
        out[n++] = v;
        if (*end == '\0')
            return n;
        if (*end != ',')
            return -1;
        p = end;
    }
}

int bc_mlp_parse(const char *spec, int64_t *batch, int64_t *width, int *layers)
{
    char *end = NULL;
    long long b = strtoll(spec, &end, 10), w[BC_MLP_MAX_LAYERS + 1];
    if (end == spec || *end != ':' || b < 1 || b > 65536)
        return -1;
    const int n = bc_mlp_parse_list(end + 1, 8, 65536, BC_MLP_MAX_LAYERS + 1, w);
    if (n < 2)
        return -1;
    for (int i = 0; i < n; i++) {
        if (w[i] % 8)
            return -1;
        width[i] = w[i];
    }
    *batch = b;
    *layers = n - 1;
    return 0;
}

static bc_status upload_random(bc_device *dev, size_t elems, double scale, bc_rng *rng, bc_devptr *out_dev,
                               void **out_host)
{
    void *h = malloc(elems * 2);
    if (h == NULL)
        return BC_ERR_OUT_OF_HOST_MEMORY;
    bc_ref_fill_normal(h, BC_DTYPE_BF16, elems, scale, rng);
    bc_status st = bc_mem_alloc(dev, elems * 2, out_dev);
    if (!st)
        st = bc_memcpy_htod(dev, *out_dev, h, elems * 2);
    if (st)
        free(h);
    else
        *out_host = h;
    return st;
}

static bc_gemm_desc layer_desc(const bc_mlp *m, int l, const char *config, uint32_t split_k, uint32_t resident)
{
    bc_gemm_desc d;
    bc_gemm_desc_default(&d);
    d.m = m->batch, d.n = m->width[l + 1], d.k = m->width[l];
    d.a = m->act[l], d.b = m->w[l], d.d = m->act[l + 1], d.bias = m->bias[l];
    d.relu = l + 1 < m->layers;
    d.config = config;
    d.split_k = split_k;
    d.resident = resident;
    return d;
}

bc_status bc_mlp_create(bc_device *dev, int64_t batch, const int64_t *width, int layers, const char *config,
                        const uint32_t *split_k, uint32_t resident, bc_rng *rng, bc_mlp *out)
{
    bc_mlp m;
    memset(&m, 0, sizeof m);
    m.layers = layers;
    m.batch = batch;
    memcpy(m.width, width, (size_t)(layers + 1) * sizeof *width);
    bc_status st = BC_OK;
    for (int l = 0; l <= layers && !st; l++)
        st = bc_mem_alloc(dev, (size_t)(batch * width[l]) * 2, &m.act[l]);
    for (int l = 0; l < layers && !st; l++) {
        st = upload_random(dev, (size_t)(width[l + 1] * width[l]), 1.0 / sqrt((double)width[l]), rng, &m.w[l],
                           &m.host_w[l]);
        if (!st)
            st = upload_random(dev, (size_t)width[l + 1], 0.5, rng, &m.bias[l], &m.host_bias[l]);
    }
    for (int l = 0; l < layers && !st; l++) {
        bc_gemm_desc d = layer_desc(&m, l, config, split_k != NULL ? split_k[l] : 0u, resident);
        st = bc_gemm_plan_create(dev, &d, &m.plan[l]);
    }
    if (!st)
        st = bc_mlp_new_input(dev, &m, rng, NULL);
    if (st) {
        bc_mlp_destroy(dev, &m);
        return st;
    }
    *out = m;
    return BC_OK;
}

bc_status bc_mlp_new_input(bc_device *dev, const bc_mlp *m, bc_rng *rng, void *host)
{
    const size_t n = (size_t)(m->batch * m->width[0]);
    void *h = host ? host : malloc(n * 2);
    if (h == NULL)
        return BC_ERR_OUT_OF_HOST_MEMORY;
    bc_ref_fill_normal(h, BC_DTYPE_BF16, n, 1.0, rng);
    bc_status st = bc_memcpy_htod(dev, m->act[0], h, n * 2);
    if (h != host)
        free(h);
    return st;
}

bc_status bc_mlp_check(bc_device *dev, const bc_mlp *m, const void *host_out, size_t *out_bad, size_t *out_checked)
{
    int64_t wmax = 0;
    for (int l = 0; l <= m->layers; l++)
        wmax = m->width[l] > wmax ? m->width[l] : wmax;
    void *x = malloc((size_t)(m->batch * wmax) * 2), *y = malloc((size_t)(m->batch * wmax) * 2);
    double *ref = malloc((size_t)wmax * sizeof *ref);
    bc_status st = x && y && ref ? BC_OK : BC_ERR_OUT_OF_HOST_MEMORY;
    if (!st)
        st = bc_memcpy_dtoh(dev, x, m->act[0], (size_t)(m->batch * m->width[0]) * 2);
    size_t bad = 0, checked = 0;
    for (int l = 0; l < m->layers && !st; l++) {
        const bc_gemm_desc d = layer_desc(m, l, NULL, 0, 0);
        const size_t bytes = (size_t)(m->batch * d.n) * 2;
        if (l + 1 == m->layers && host_out)
            memcpy(y, host_out, bytes);
        else
            st = bc_memcpy_dtoh(dev, y, m->act[l + 1], bytes);
        bc_ref_error e;
        memset(&e, 0, sizeof e);
        for (int64_t r = 0; r < m->batch && !st; r++) {
            bc_ref_gemm_row(&d, x, m->host_w[l], NULL, m->host_bias[l], r, ref);
            bc_ref_compare_row(&d, y, r, ref, &e);
        }
        bad += e.bad + e.nonfinite;
        checked += e.checked;
        void *t = x;
        x = y, y = t;
    }
    free(x), free(y), free(ref);
    if (!st)
        *out_bad = bad, *out_checked = checked;
    return st;
}

void bc_mlp_destroy(bc_device *dev, bc_mlp *m)
{
    for (int l = 0; l < m->layers; l++) {
        bc_gemm_plan_destroy(m->plan[l]);
        if (m->w[l])
            bc_mem_free(dev, m->w[l]);
        if (m->bias[l])
            bc_mem_free(dev, m->bias[l]);
        free(m->host_w[l]);
        free(m->host_bias[l]);
    }
    for (int l = 0; l <= m->layers; l++)
        if (m->act[l])
            bc_mem_free(dev, m->act[l]);
    memset(m, 0, sizeof *m);
}
