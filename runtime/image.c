/* The embedded kernel image: one module, loaded through the same loader as
 * a user's (module.c: parse, digests, select, cuModuleLoadDataEx), then the
 * manifest kernels of its family resolved into the fast table the GEMM and
 * the self-tests launch from, each with its dynamic shared-memory limit.
 * Resolving a manifest kernel also forces it to load under
 * CUDA_MODULE_LOADING=LAZY, so every failure of a resolved kernel happens
 * at open; the optional groups not asked for (bc_device_config.kernel_groups)
 * are left unresolved, and their plans fail at creation instead. On sm_90a
 * the optional groups (the portable family and the resident kernels) are a
 * cubin of their own, loaded through the same loader as a second module
 * only when one of them is asked for: the driver parses and the loader
 * hashes 0.8 MB at a default open instead of 1.35 MB; the stream-K twins
 * are a third, loaded only when they are asked for. */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "gemm_abi.h"
#include "image.h"
#include "module_internal.h"
#include "resident_abi.h"
#include "select.h"

/* The embedded blob: loader/embedded_blob.S and build/gen/fatbin_digest.c. */
extern const uint8_t bc__fatbin_bytes[];
extern const uint8_t bc__fatbin_bytes_end[];
extern const size_t bc__fatbin_size;
extern const uint64_t bc__fatbin_entry_digest[];
extern const size_t bc__fatbin_entry_count;
extern const uint64_t bc__fatbin_headers_digest;
/* The sm_90a optional groups' cubin: loader/embedded_blob.S and build/gen/groups_digest.c. */
extern const uint8_t bc__groups_bytes[];
extern const uint8_t bc__groups_bytes_end[];
extern const size_t bc__groups_size;
extern const uint64_t bc__groups_entry_digest[];
extern const size_t bc__groups_entry_count;
extern const uint64_t bc__groups_headers_digest;
/* The sm_90a stream-K cubin: loader/embedded_blob.S and build/gen/sk_digest.c. */
extern const uint8_t bc__sk_bytes[];
extern const uint8_t bc__sk_bytes_end[];
extern const size_t bc__sk_size;
extern const uint64_t bc__sk_entry_digest[];
extern const size_t bc__sk_entry_count;
extern const uint64_t bc__sk_headers_digest;


static const struct {
    const char *symbol;
    const char *family_name;
    bc__family family;
    int smem;
} manifest[BC__KERNEL_COUNT] = {
#define K(id, sym, fam, smem) [BC_K_##id] = {#sym, #fam, BC__FAM_##fam, (smem)},
#include "manifest.h"
#undef K
};

/* Resolves every manifest kernel of the families in `fams` (a mask of
 * 1u << bc__family) from `mod` into img->fn and sets the dynamic
 * shared-memory limit of those that use it. */
static bc_status resolve_manifest(bc__image *img, bc_module *mod, unsigned fams)
{
    for (int i = 0; i < BC__KERNEL_COUNT; i++) {
        if (!(fams & (1u << manifest[i].family)))
            continue;
        bc_kernel *k = NULL;
        bc_status st = bc__kernel_resolve(mod, manifest[i].symbol, 0, &k);
        if (st)
            return st;
        img->fn[i] = k->fn;
        if (manifest[i].smem <= 0)
            continue;
        st = BC_CU(cuFuncSetAttribute, k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, manifest[i].smem);
        if (st) {
            char what[160];
            snprintf(what, sizeof what, "cannot set %s's dynamic shared memory limit to %d bytes",
                     manifest[i].symbol, manifest[i].smem);
            return bc__refail(st, BC_ERR_MODULE_LOAD, "cuFuncSetAttribute", what);
        }
        k->smem_attr = manifest[i].smem;
    }
    return BC_OK;
}

/* Loads one embedded container in place (the bytes outlive the module),
 * its headers and selected entry checked against the build's digests.
 * Adds its times. */
static bc_status load_embedded(bc_device *dev, bc_module **out_mod, const uint8_t *buf, size_t len,
                               const uint64_t *entry_digests, size_t entry_count, uint64_t headers_digest,
                               double *check_us, double *load_us)
{
    const bc__module_args a = {.bytes = buf,
                               .len = len,
                               .entry_digests = entry_digests,
                               .entry_count = entry_count,
                               .headers_digest = headers_digest,
                               .borrow = 1};
    double c = 0, l = 0;
    bc_status st = bc__module_load(dev, &a, out_mod, &c, &l);
    *check_us += c;
    *load_us += l;
    return st;
}

/* resolve_manifest, its time added to *load_us (resolution and attributes
 * count as loading). */
static bc_status resolve_timed(bc__image *img, bc_module *mod, unsigned fams, double *load_us)
{
    const double t0 = bc__now_us();
    bc_status st = resolve_manifest(img, mod, fams);
    *load_us += bc__now_us() - t0;
    return st;
}

/* One embedded optional cubin of an sm_90a image: `what` names it in
 * messages, its build-time size and digests beside it. */
typedef struct optional_cubin {
    const char *what;
    const uint8_t *bytes, *end;
    size_t size;
    const uint64_t *entry_digest;
    size_t entry_count;
    uint64_t headers_digest;
} optional_cubin;

/* Loads `c` as *out_mod and resolves the families `fams` from it, when
 * there are any. Adds its times. */
static bc_status load_optional(bc_device *dev, bc__image *img, const optional_cubin *c, unsigned fams,
                               bc_module **out_mod, double *check_us, double *load_us)
{
    if (fams == 0)
        return BC_OK;
    size_t len = (size_t)(c->end - c->bytes);
    if (len != c->size)
        return BC_FAIL(BC_ERR_DIGEST_MISMATCH, "kernel groups digest",
                       "the embedded %s cubin is %zu bytes; the build recorded %zu (stale object?)", c->what, len,
                       c->size);
    bc_status st = load_embedded(dev, out_mod, c->bytes, len, c->entry_digest, c->entry_count, c->headers_digest,
                                 check_us, load_us);
    return st ? st : resolve_timed(img, *out_mod, fams, load_us);
}

/* On an sm_90a image, the optional groups asked for
 * (bc_device_config.kernel_groups): the resident kernels and the portable
 * family beside the native one from their cubin, loaded as img->groups;
 * the stream-K twins from theirs, as img->sk. Adds its times. Every image
 * resolves all of its own families; only these are optional. */
static bc_status load_groups(bc_device *dev, bc__image *img, double *check_us, double *load_us)
{
    const uint32_t groups = dev->cfg.kernel_groups;
    const optional_cubin gc = {"optional-groups",       bc__groups_bytes,       bc__groups_bytes_end,
                               bc__groups_size,         bc__groups_entry_digest, bc__groups_entry_count,
                               bc__groups_headers_digest};
    const optional_cubin sk = {"stream-K",   bc__sk_bytes,       bc__sk_bytes_end,     bc__sk_size,
                               bc__sk_entry_digest, bc__sk_entry_count, bc__sk_headers_digest};
    const unsigned fams = (groups & BC_KERNELS_RESIDENT ? 1u << BC__FAM_RES90 : 0u) |
                          (groups & BC_KERNELS_PORTABLE ? 1u << BC__FAM_SM80 : 0u);
    bc_status st = load_optional(dev, img, &gc, fams, &img->groups, check_us, load_us);
    if (!st)
        st = load_optional(dev, img, &sk, groups & BC_KERNELS_STREAM_K ? 1u << BC__FAM_SK90 : 0u, &img->sk,
                           check_us, load_us);
    return st;
}

bc_status bc__image_load_from(bc_device *dev, bc__image *img, const uint8_t *buf, size_t len,
                              const uint64_t *entry_digests, size_t entry_count, uint64_t headers_digest,
                              bc__image_timing *out_timing)
{
    if (img != NULL)
        memset(img, 0, sizeof *img);
    if (dev == NULL || img == NULL || (buf == NULL && len != 0) || entry_digests == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__image_load", "dev, img, buf or the digest table is NULL");
    bc__image tmp;
    memset(&tmp, 0, sizeof tmp);
    double check_us = 0, load_us = 0;
    bc_status st = load_embedded(dev, &tmp.mod, buf, len, entry_digests, entry_count, headers_digest, &check_us,
                                 &load_us);
    if (st)
        return st;
    snprintf(tmp.arch, sizeof tmp.arch, "%s", tmp.mod->arch);
    const unsigned fams = bc__image_families(&tmp.mod->entry);
    st = resolve_timed(&tmp, tmp.mod, fams, &load_us);
    if (!st && (fams & (1u << BC__FAM_SM90)))
        st = load_groups(dev, &tmp, &check_us, &load_us);
    if (st) {
        bc__image_unload(&tmp);
        return st;
    }
    *img = tmp;
    if (out_timing) {
        out_timing->check_us = check_us;
        out_timing->load_us = load_us;
    }
    return BC_OK;
}

bc_status bc__image_load(bc_device *dev, bc__image *img, bc__image_timing *out_timing)
{
    size_t blob = (size_t)(bc__fatbin_bytes_end - bc__fatbin_bytes);
    if (blob != bc__fatbin_size) {
        if (img)
            memset(img, 0, sizeof *img);
        return BC_FAIL(BC_ERR_DIGEST_MISMATCH, "fatbin digest",
                       "the embedded blob is %zu bytes; the build recorded %zu (stale object?)", blob,
                       bc__fatbin_size);
    }
    /* Only the entry headers and the selected image are hashed (about 0.9
     * of the 3.2 MB): the other images' payloads are bounds-checked, not
     * read. The whole-blob check with the pages mapped in one madvise
     * beforehand took 380-500 us on a desktop x86, this one 90-110 us (the
     * madvise alone, 45 us, no longer pays). */
    return bc__image_load_from(dev, img, bc__fatbin_bytes, bc__fatbin_size, bc__fatbin_entry_digest,
                               bc__fatbin_entry_count, bc__fatbin_headers_digest, out_timing);
}

const char *bc__image_group_missing(const bc_device *dev, uint32_t group)
{
    if (dev->cfg.skip_kernel_load)
        return "the device was opened with skip_kernel_load";
    return group == BC_KERNELS_RESIDENT   ? "the device was opened without BC_KERNELS_RESIDENT in "
                                            "bc_device_config.kernel_groups"
           : group == BC_KERNELS_PORTABLE ? "the device was opened without BC_KERNELS_PORTABLE in "
                                            "bc_device_config.kernel_groups"
                                          : "the device was opened without BC_KERNELS_STREAM_K in "
                                            "bc_device_config.kernel_groups";
}

void bc__image_unload(bc__image *img)
{
    if (img == NULL)
        return;
    bc__module_free(img->sk);
    bc__module_free(img->groups);
    bc__module_free(img->mod);
    memset(img, 0, sizeof *img);
}
