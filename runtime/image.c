/* The embedded kernel image: one module, loaded through the same loader as
 * a user's (module.c: parse, digests, select, cuModuleLoadDataEx), then the
 * manifest kernels of its family resolved into the fast table the GEMM and
 * the self-tests launch from, each with its dynamic shared-memory limit.
 * Resolving a manifest kernel also forces it to load under
 * CUDA_MODULE_LOADING=LAZY, so every failure of a resolved kernel happens
 * at open; the optional groups not asked for (bc_device_config.kernel_groups)
 * are left unresolved, and their plans fail at creation instead. */
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
 * 1u << bc__family) into img->fn and sets the dynamic shared-memory limit
 * of those that use it. */
static bc_status resolve_manifest(bc__image *img, unsigned fams)
{
    for (int i = 0; i < BC__KERNEL_COUNT; i++) {
        if (!(fams & (1u << manifest[i].family)))
            continue;
        bc_kernel *k = NULL;
        bc_status st = bc__kernel_resolve(img->mod, manifest[i].symbol, 0, &k);
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
            return bc__refail(BC_ERR_MODULE_LOAD, "cuFuncSetAttribute", what);
        }
        k->smem_attr = manifest[i].smem;
    }
    return BC_OK;
}

/* The families of an image (bc__image_families) that open resolves: all,
 * but the optional groups (bc_device_config.kernel_groups) not asked for:
 * the resident kernels, and the portable family beside a native one. */
static unsigned families_to_resolve(unsigned fams, uint32_t groups)
{
    if (!(groups & BC_KERNELS_RESIDENT))
        fams &= ~(1u << BC__FAM_RES90);
    if (!(groups & BC_KERNELS_PORTABLE) && (fams & (1u << BC__FAM_SM90)))
        fams &= ~(1u << BC__FAM_SM80);
    return fams;
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
    const bc__module_args a = {.bytes = buf,
                               .len = len,
                               .entry_digests = entry_digests,
                               .entry_count = entry_count,
                               .headers_digest = headers_digest,
                               .borrow = 1};
    double check_us = 0, load_us = 0;
    bc_status st = bc__module_load(dev, &a, &tmp.mod, &check_us, &load_us);
    if (st)
        return st;
    snprintf(tmp.arch, sizeof tmp.arch, "%s", tmp.mod->arch);
    double t0 = bc__now_us();
    st = resolve_manifest(&tmp, families_to_resolve(bc__image_families(&tmp.mod->entry), dev->cfg.kernel_groups));
    load_us += bc__now_us() - t0; /* resolution and attributes count as loading */
    if (st) {
        bc__module_free(tmp.mod);
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

void bc__image_unload(bc__image *img)
{
    if (img == NULL)
        return;
    bc__module_free(img->mod);
    memset(img, 0, sizeof *img);
}
