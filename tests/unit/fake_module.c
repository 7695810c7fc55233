/* Fake driver: modules, functions, launches, tensor maps.
 *
 * cuModuleLoadDataEx accepts any bytes (it keeps a copy); a kernel exists if
 * its name appears NUL-terminated in the image (ELF string tables hold
 * them), or after ".entry" in a PTX text image. Launches are validated
 * against what the driver would refuse cheaply and recorded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_internal.h"
#include "gemm_abi.h"
#include "resident_abi.h"

/* --------------------------------------------------------------- images */

static uint64_t rd(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Size of an ELF64 image: the furthest byte any header or section reaches. */
static size_t elf_size(const unsigned char *b)
{
    uint64_t phoff = rd(b + 0x20, 8), shoff = rd(b + 0x28, 8);
    uint64_t phent = rd(b + 0x36, 2), phnum = rd(b + 0x38, 2);
    uint64_t shent = rd(b + 0x3a, 2), shnum = rd(b + 0x3c, 2);
    uint64_t end = max64(64, max64(phoff + phent * phnum, shoff + shent * shnum));
    if (end > (1ull << 30))
        return 64;
    for (uint64_t i = 0; i < shnum && shent >= 0x28; i++) {
        const unsigned char *sh = b + shoff + i * shent;
        if (rd(sh + 4, 4) != 8 /* SHT_NOBITS */)
            end = max64(end, rd(sh + 0x18, 8) + rd(sh + 0x20, 8));
    }
    for (uint64_t i = 0; i < phnum && phent >= 0x28; i++) {
        const unsigned char *ph = b + phoff + i * phent;
        end = max64(end, rd(ph + 0x08, 8) + rd(ph + 0x20, 8));
    }
    return end > (1ull << 30) ? 64 : (size_t)end;
}

/* The byte tests are ordered so that a short NUL-terminated text image is
 * never read past its terminator. */
static size_t image_size(const void *image, int *is_text)
{
    const unsigned char *b = image;
    *is_text = 0;
    if (fake__s.next_image_size) {
        size_t n = fake__s.next_image_size;
        fake__s.next_image_size = 0;
        return n;
    }
    if (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F' && b[4] == 2)
        return elf_size(b);
    if (b[0] == 0x50 && b[1] == 0xed && b[2] == 0x55 && b[3] == 0xba) /* fatbin 0xBA55ED50 */
        return (size_t)(rd(b + 6, 2) + rd(b + 8, 8));
    *is_text = 1;
    return strlen(image) + 1;
}

static int ident(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$';
}

static int image_has_kernel(const struct CUmod_st *m, const char *name, int is_text)
{
    const unsigned char *img = m->image;
    size_t n = strlen(name);
    if (n == 0 || n >= m->size)
        return 0;
    for (size_t i = 0; i + n < m->size; i++) {
        if (memcmp(img + i, name, n) != 0)
            continue;
        if (!is_text && (i == 0 || img[i - 1] == 0) && img[i + n] == 0)
            return 1;
        if (is_text && !ident(img[i + n])) {
            size_t j = i;
            while (j > 0 && (img[j - 1] == ' ' || img[j - 1] == '\t'))
                j--;
            if (j < i && j >= 6 && memcmp(img + j - 6, ".entry", 6) == 0)
                return 1;
        }
    }
    return 0;
}

/* -------------------------------------------------------------- modules */

static void write_log(unsigned n, const CUjit_option *opt, void **val, CUjit_option buf_opt,
                      CUjit_option size_opt, const char *text)
{
    int ib = -1, is = -1;
    for (unsigned i = 0; i < n; i++) {
        if (opt[i] == buf_opt)
            ib = (int)i;
        if (opt[i] == size_opt)
            is = (int)i;
    }
    if (ib < 0 || is < 0 || val[ib] == NULL)
        return;
    size_t cap = (size_t)(uintptr_t)val[is];
    if (cap == 0)
        return;
    size_t len = strlen(text);
    if (len > cap - 1)
        len = cap - 1;
    memcpy(val[ib], text, len);
    ((char *)val[ib])[len] = '\0';
    val[is] = (void *)(uintptr_t)(len + 1);
}

static CUresult fake_cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned nopt,
                                        CUjit_option *opt, void **val)
{
    FAKE_ENTER(cuModuleLoadDataEx);
    if (module == NULL || image == NULL || (nopt && (opt == NULL || val == NULL)))
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUcontext c = fake__current();
    if (c == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    fake_module_record *rec = &fake__s.module;
    int is_text = 0;
    memset(rec, 0, sizeof *rec);
    rec->image = image;
    rec->size = image_size(image, &is_text);
    rec->num_options = nopt;
    for (unsigned i = 0; i < nopt && i < 16; i++)
        rec->options[i] = opt[i];
    if (fake__s.module_fail != CUDA_SUCCESS) {
        rec->result = fake__s.module_fail;
        fake__s.module_fail = CUDA_SUCCESS;
        write_log(nopt, opt, val, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                  fake__s.module_log);
        FAKE_RETURN(rec->result);
    }
    struct CUmod_st *m = calloc(1, sizeof *m);
    void *copy = malloc(rec->size);
    if (m == NULL || copy == NULL) {
        free(m);
        free(copy);
        FAKE_RETURN(rec->result = CUDA_ERROR_OUT_OF_MEMORY);
    }
    memcpy(copy, image, rec->size);
    if (is_text) /* remembered through a NUL-terminated copy: size includes it */
        ((char *)copy)[rec->size - 1] = '\0';
    m->ctx = c;
    m->image = copy;
    m->size = rec->size;
    m->is_text = is_text;
    fake__link(K_MODULE, &m->o);
    *module = m;
    char info[96];
    snprintf(info, sizeof info, "fake driver: loaded %zu-byte image", rec->size);
    write_log(nopt, opt, val, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, info);
    FAKE_RETURN(CUDA_SUCCESS);
}

static void free_module(struct CUmod_st *m)
{
    while (m->funcs) {
        struct CUfunc_st *f = m->funcs;
        m->funcs = f->next;
        free(f);
    }
    fake__unlink(&m->o);
    free((void *)m->image);
    free(m);
}

static CUresult fake_cuModuleUnload(CUmodule m)
{
    FAKE_ENTER_RELEASE(cuModuleUnload);
    if (fake__find(K_MODULE, m) && fake__ctx_alive(m->ctx))
        fake__wait_busy(&m->ctx->busy);
    if (!fake__find(K_MODULE, m))
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    free_module(m);
    FAKE_RETURN(CUDA_SUCCESS);
}

struct CUfunc_st *fake__find_func(const void *h)
{
    if (h == NULL)
        return NULL;
    fake_obj *head = &fake__s.live[K_MODULE];
    for (fake_obj *o = head->next; o != head; o = o->next)
        for (struct CUfunc_st *f = ((struct CUmod_st *)o)->funcs; f; f = f->next)
            if ((const void *)f == h)
                return f;
    return NULL;
}

static CUresult fake_cuModuleGetFunction(CUfunction *out, CUmodule m, const char *name)
{
    FAKE_ENTER(cuModuleGetFunction);
    if (out == NULL || name == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fake__find(K_MODULE, m))
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    for (struct CUfunc_st *f = m->funcs; f; f = f->next)
        if (!strcmp(f->name, name)) {
            *out = f;
            FAKE_RETURN(CUDA_SUCCESS);
        }
    if (strlen(name) >= sizeof m->funcs->name || !image_has_kernel(m, name, m->is_text))
        FAKE_RETURN(CUDA_ERROR_NOT_FOUND);
    struct CUfunc_st *f = calloc(1, sizeof *f);
    if (f == NULL)
        FAKE_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    const fake_device *d = &fake__s.dev[m->ctx->device].cfg;
    snprintf(f->name, sizeof f->name, "%s", name);
    f->mod = m;
    f->attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = 1024;
    f->attr[CU_FUNC_ATTRIBUTE_NUM_REGS] = 32;
    f->attr[CU_FUNC_ATTRIBUTE_PTX_VERSION] = d->cc_major * 10 + d->cc_minor;
    f->attr[CU_FUNC_ATTRIBUTE_BINARY_VERSION] = d->cc_major * 10 + d->cc_minor;
    f->attr[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES] = 49152;
    f->attr[CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT] = -1;
    for (int i = 0; i < fake__s.nkattr; i++)
        if (!strcmp(fake__s.kattr[i].kernel, name))
            f->attr[fake__s.kattr[i].attr] = fake__s.kattr[i].value;
    f->next = m->funcs;
    m->funcs = f;
    *out = f;
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuFuncSetAttribute(CUfunction h, CUfunction_attribute a, int v)
{
    FAKE_ENTER(cuFuncSetAttribute);
    struct CUfunc_st *f = fake__find_func(h);
    if (f == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    int optin = fake__s.dev[f->mod->ctx->device].cfg.smem_optin;
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if (v < 0 || v > optin - f->attr[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES])
            FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
        break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (v < -1 || v > 100)
            FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
        break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        if (v < 0)
            FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
        break;
    default: /* read-only */
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    }
    f->attr[a] = v;
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuFuncGetAttribute(int *pi, CUfunction_attribute a, CUfunction h)
{
    FAKE_ENTER(cuFuncGetAttribute);
    if (pi == NULL || (unsigned)a >= CU_FUNC_ATTRIBUTE_MAX)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    struct CUfunc_st *f = fake__find_func(h);
    if (f == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    *pi = f->attr[a];
    FAKE_RETURN(CUDA_SUCCESS);
}

int fake_function_attr(CUfunction h, CUfunction_attribute a, int *out)
{
    fake__lock();
    struct CUfunc_st *f = fake__find_func(h);
    if (f && (unsigned)a < CU_FUNC_ATTRIBUTE_MAX && out)
        *out = f->attr[a];
    fake__unlock();
    return f != NULL;
}

const char *fake_function_name(CUfunction h)
{
    fake__lock();
    struct CUfunc_st *f = fake__find_func(h);
    fake__unlock();
    return f ? f->name : NULL;
}

const fake_module_record *fake_last_module(void) { return &fake__s.module; }

/* --------------------------------------------------------------- launch */

/* The parameter size the real driver reads from a kernel's metadata, for
 * barecuda's kernels whose parameter is smaller than the configured copy. */
static size_t kernel_param_size(const char *name)
{
    if (name != NULL && (strcmp(name, "bc_smoke_checksum") == 0 || strcmp(name, "bc_test_spin") == 0 ||
                         strcmp(name, "bc_test_fault") == 0))
        return sizeof(bc_smoke_params) > sizeof(bc_spin_params) ? sizeof(bc_smoke_params) : sizeof(bc_spin_params);
    if (name != NULL && strncmp(name, "bc_resident_", 12) == 0)
        return sizeof(bc_resident_params);
    return (size_t)-1;
}

/* Copies the first parameter's bytes (fake_set_param_size, capped at the
 * kernel's own parameter size) from kernelParams, or from a
 * CU_LAUNCH_PARAM_BUFFER_POINTER in `extra`. */
/* Every parameter of a kernel with a registered signature, at its offset. */
static CUresult copy_by_signature(const fake_kernel_sig *s, void **params, unsigned char *dst, size_t *out_n)
{
    size_t end = 0;
    for (int i = 0; i < s->count; i++) {
        if (params == NULL || params[i] == NULL || s->offset[i] + s->size[i] > FAKE_MAX_PARAM_BYTES)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(dst + s->offset[i], params[i], s->size[i]);
        if (s->offset[i] + s->size[i] > end)
            end = s->offset[i] + s->size[i];
    }
    *out_n = end;
    return CUDA_SUCCESS;
}

CUresult fake__copy_params(const char *kernel, void **params, void **extra, unsigned char *dst, size_t *out_n)
{
    const fake_kernel_sig *sig = fake__kernel_sig(kernel);
    if (sig != NULL && extra == NULL)
        return copy_by_signature(sig, params, dst, out_n);
    size_t n = fake__s.param_size;
    if (n > kernel_param_size(kernel))
        n = kernel_param_size(kernel);
    *out_n = 0;
    if (params != NULL) {
        if (n == 0)
            return CUDA_SUCCESS;
        if (params[0] == NULL)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(dst, params[0], n);
        *out_n = n;
        return CUDA_SUCCESS;
    }
    if (extra != NULL) {
        const void *buf = NULL;
        size_t size = 0;
        for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END && i < 16; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
                size = *(const size_t *)extra[i + 1];
        }
        if (buf == NULL)
            return CUDA_ERROR_INVALID_VALUE;
        n = size < FAKE_MAX_PARAM_BYTES ? size : FAKE_MAX_PARAM_BYTES;
        memcpy(dst, buf, n);
        *out_n = n;
        return CUDA_SUCCESS;
    }
    return n ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

static CUresult fake_cuLaunchKernelEx(const CUlaunchConfig *cfg, CUfunction h, void **params,
                                      void **extra)
{
    FAKE_ENTER(cuLaunchKernelEx);
    if (cfg == NULL || (cfg->numAttrs && cfg->attrs == NULL))
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    struct CUfunc_st *f = fake__find_func(h);
    if (f == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    CUcontext c = fake__current();
    if (c == NULL)
        FAKE_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    if (f->mod->ctx != c)
        FAKE_RETURN(CUDA_ERROR_INVALID_HANDLE);
    struct CUstream_st *s = NULL;
    CUresult r = fake__stream(cfg->hStream, &s);
    if (r != CUDA_SUCCESS)
        FAKE_RETURN(r);
    const unsigned g[3] = {cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ};
    const unsigned b[3] = {cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ};
    if (!g[0] || !g[1] || !g[2] || !b[0] || !b[1] || !b[2] || g[1] > 65535 || g[2] > 65535 ||
        b[2] > 64 || (uint64_t)b[0] * b[1] * b[2] > (uint64_t)f->attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK])
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (cfg->sharedMemBytes > (unsigned)f->attr[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES])
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    unsigned cl[3] = {1, 1, 1};
    for (unsigned i = 0; i < cfg->numAttrs; i++) {
        const CUlaunchAttribute *at = &cfg->attrs[i];
        if (at->id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            continue;
        cl[0] = at->value.clusterDim.x;
        cl[1] = at->value.clusterDim.y;
        cl[2] = at->value.clusterDim.z;
        if (!cl[0] || !cl[1] || !cl[2] || g[0] % cl[0] || g[1] % cl[1] || g[2] % cl[2])
            FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
        unsigned size = cl[0] * cl[1] * cl[2];
        unsigned max = f->attr[CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED] ? 16 : 8;
        if (size > max)
            FAKE_RETURN(CUDA_ERROR_INVALID_CLUSTER_SIZE);
    }
    fake_launch *L = &fake__s.launch;
    r = fake__copy_params(f->name, params, extra, L->params, &L->param_bytes);
    if (r != CUDA_SUCCESS)
        FAKE_RETURN(r);
    L->func = f;
    snprintf(L->kernel, sizeof L->kernel, "%s", f->name);
    memcpy(L->grid, g, sizeof g);
    memcpy(L->block, b, sizeof b);
    memcpy(L->cluster, cl, sizeof cl);
    L->smem = cfg->sharedMemBytes;
    L->stream = cfg->hStream;
    L->num_attrs = cfg->numAttrs;
    memset(L->attrs, 0, sizeof L->attrs);
    for (unsigned i = 0; i < cfg->numAttrs && i < FAKE_MAX_LAUNCH_ATTRS; i++)
        L->attrs[i] = cfg->attrs[i];
    L->kernel_params = params;
    L->captured = s != NULL && s->capture != NULL;
    if (!L->captured) {
        if (strncmp(f->name, "bc_resident_", 12) == 0) { /* a persistent kernel: a thread (fake_resident.c) */
            r = fake__resident_launch(f, cfg, params);
            if (r != CUDA_SUCCESS)
                FAKE_RETURN(r);
        }
        fake__s.launches++;
        fake__kernel_started(fake__current(), s);
        FAKE_RETURN(CUDA_SUCCESS);
    }
    struct CUgraphNode_st *node = fake__graph_add_node(s->capture, NODE_KERNEL);
    if (node == NULL)
        FAKE_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    node->k.func = f;
    snprintf(node->k.kernel, sizeof node->k.kernel, "%s", f->name);
    memcpy(node->k.grid, g, sizeof g);
    memcpy(node->k.block, b, sizeof b);
    node->k.smem = cfg->sharedMemBytes;
    node->k.param_bytes = L->param_bytes;
    memcpy(node->k.params, L->params, L->param_bytes);
    node->k.num_attrs = cfg->numAttrs < FAKE_MAX_LAUNCH_ATTRS ? cfg->numAttrs : FAKE_MAX_LAUNCH_ATTRS;
    memcpy(node->k.attrs, L->attrs, sizeof node->k.attrs);
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *out, CUfunction f, int threads, size_t smem)
{
    FAKE_ENTER(cuOccupancyMaxActiveBlocksPerMultiprocessor);
    FAKE_RETURN(fake__occupancy(out, f, threads, smem));
}

const fake_launch *fake_last_launch(void) { return &fake__s.launch; }
uint64_t fake_launches(void) { return fake__s.launches; }

/* ----------------------------------------------------------- tensor maps */

/* Element size in bits (the packed 4/6-bit types count as their container). */
static unsigned dtype_bits(CUtensorMapDataType t)
{
    static const unsigned bits[] = {8, 16, 32, 32, 64, 64, 16, 32, 64, 16, 32, 32, 32, 4, 4, 6};
    return (unsigned)t < sizeof bits / sizeof bits[0] ? bits[t] : 0;
}

static CUresult check_tiled(const fake_tensor_map_args *a, const cuuint64_t *gdim,
                            const cuuint64_t *gstr, const cuuint32_t *box, const cuuint32_t *es)
{
    unsigned bits = dtype_bits(a->dtype);
    if (a->map == NULL || (uintptr_t)a->map % 64 || bits == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->rank < 1 || a->rank > 5 || (a->interleave != CU_TENSOR_MAP_INTERLEAVE_NONE && a->rank < 3))
        return CUDA_ERROR_INVALID_VALUE;
    if ((unsigned)a->interleave > CU_TENSOR_MAP_INTERLEAVE_32B ||
        (unsigned)a->swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B ||
        (unsigned)a->l2_promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B ||
        (unsigned)a->oob_fill > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned addr_align = a->interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
    if (a->global_address == NULL || (uintptr_t)a->global_address % addr_align)
        return CUDA_ERROR_INVALID_VALUE;
    if (gdim == NULL || box == NULL || es == NULL || (a->rank > 1 && gstr == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < a->rank; i++) {
        if (gdim[i] == 0 || gdim[i] > (1ull << 32))
            return CUDA_ERROR_INVALID_VALUE;
        if (box[i] == 0 || box[i] > 256)
            return CUDA_ERROR_INVALID_VALUE;
        if (es[i] == 0 || es[i] > 8)
            return CUDA_ERROR_INVALID_VALUE;
    }
    unsigned stride_align = a->interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
    for (unsigned i = 0; i + 1 < a->rank; i++)
        if (gstr[i] % stride_align || gstr[i] >= (1ull << 40))
            return CUDA_ERROR_INVALID_VALUE;
    if (a->interleave == CU_TENSOR_MAP_INTERLEAVE_32B && a->swizzle != CU_TENSOR_MAP_SWIZZLE_32B)
        return CUDA_ERROR_INVALID_VALUE;
    if (a->interleave == CU_TENSOR_MAP_INTERLEAVE_NONE && bits >= 8) {
        uint64_t inner = (uint64_t)box[0] * bits / 8;
        if (inner % 16)
            return CUDA_ERROR_INVALID_VALUE;
        uint64_t span = a->swizzle == CU_TENSOR_MAP_SWIZZLE_NONE  ? UINT64_MAX
                        : a->swizzle == CU_TENSOR_MAP_SWIZZLE_32B ? 32
                        : a->swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 64
                                                                  : 128;
        if (inner > span)
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUresult fake_cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType dtype,
                                            cuuint32_t rank, void *addr, const cuuint64_t *gdim,
                                            const cuuint64_t *gstr, const cuuint32_t *box,
                                            const cuuint32_t *es, CUtensorMapInterleave il,
                                            CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
                                            CUtensorMapFloatOOBfill oob)
{
    FAKE_ENTER(cuTensorMapEncodeTiled);
    fake_tensor_map_args *a = &fake__s.tmap;
    memset(a, 0, sizeof *a);
    a->map = map;
    a->dtype = dtype;
    a->rank = rank;
    a->global_address = addr;
    a->interleave = il;
    a->swizzle = sw;
    a->l2_promotion = l2;
    a->oob_fill = oob;
    unsigned n = rank <= 5 ? rank : 0; /* a bad rank is refused before the arrays are read */
    for (unsigned i = 0; i < n; i++) {
        if (gdim)
            a->global_dim[i] = gdim[i];
        if (gstr && i + 1 < n)
            a->global_strides[i] = gstr[i];
        if (box)
            a->box_dim[i] = box[i];
        if (es)
            a->element_strides[i] = es[i];
    }
    a->result = check_tiled(a, gdim, gstr, box, es);
    if (a->result != CUDA_SUCCESS)
        FAKE_RETURN(a->result);
    uint64_t w[16] = {0};
    w[0] = (uint64_t)(uintptr_t)addr;
    w[1] = FAKE_TMAP_MAGIC;
    w[2] = (uint64_t)dtype | (uint64_t)rank << 8 | (uint64_t)il << 16 | (uint64_t)sw << 24 |
           (uint64_t)l2 << 32 | (uint64_t)oob << 40;
    for (unsigned i = 0; i < 5; i++)
        w[3 + i] = a->global_dim[i];
    for (unsigned i = 0; i < 4; i++)
        w[8 + i] = a->global_strides[i];
    for (unsigned i = 0; i < 4; i++)
        w[12] |= (uint64_t)(a->box_dim[i] & 0xffff) << (16 * i);
    w[13] = a->box_dim[4] & 0xffff;
    for (unsigned i = 0; i < 3; i++)
        w[13] |= (uint64_t)(a->element_strides[i] & 0xffff) << (16 * (i + 1));
    w[14] = (uint64_t)a->element_strides[3] | (uint64_t)a->element_strides[4] << 16;
    w[15] = ++fake__s.tmap_serial;
    memcpy(map, w, sizeof w);
    FAKE_RETURN(CUDA_SUCCESS);
}

static CUresult fake_cuTensorMapReplaceAddress(CUtensorMap *map, void *addr)
{
    FAKE_ENTER(cuTensorMapReplaceAddress);
    if (map == NULL || (uintptr_t)map % 64 || addr == NULL || (uintptr_t)addr % 16)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    uint64_t w[2];
    memcpy(w, map, sizeof w);
    if (w[1] != FAKE_TMAP_MAGIC)
        FAKE_RETURN(CUDA_ERROR_INVALID_VALUE);
    w[0] = (uint64_t)(uintptr_t)addr;
    memcpy(map, w, sizeof w[0]);
    fake__s.tmap_replaces++;
    FAKE_RETURN(CUDA_SUCCESS);
}

const fake_tensor_map_args *fake_last_tensor_map(void) { return &fake__s.tmap; }
uint64_t fake_tensor_map_replaces(void) { return fake__s.tmap_replaces; }

/* ------------------------------------------------------------------ reset */

void fake__free_all_modules(void)
{
    fake_obj *head = &fake__s.live[K_MODULE];
    while (head->next != head)
        free_module((struct CUmod_st *)head->next);
}

void fake__fill_module(bc__driver *t)
{
    t->cuModuleLoadDataEx = fake_cuModuleLoadDataEx;
    t->cuModuleUnload = fake_cuModuleUnload;
    t->cuModuleGetFunction = fake_cuModuleGetFunction;
    t->cuFuncSetAttribute = fake_cuFuncSetAttribute;
    t->cuFuncGetAttribute = fake_cuFuncGetAttribute;
    t->cuLaunchKernelEx = fake_cuLaunchKernelEx;
    t->cuOccupancyMaxActiveBlocksPerMultiprocessor = fake_cuOccupancyMaxActiveBlocksPerMultiprocessor;
    t->cuTensorMapEncodeTiled = fake_cuTensorMapEncodeTiled;
    t->cuTensorMapReplaceAddress = fake_cuTensorMapReplaceAddress;
}
