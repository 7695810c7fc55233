/* Image selection by compute capability: the rule is documented in select.h. */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "select.h"

enum { RANK_NONE = 0, RANK_PLAIN = 1, RANK_FAMILY = 2, RANK_EXACT = 3 };

/* How well entry e fits device sm_<dev_major><dev_minor>: RANK_NONE if it
 * cannot run there. */
static int rank_of(const bc__fatbin_entry *e, unsigned dev_major, unsigned dev_minor)
{
    if (e->kind != BC__FATBIN_KIND_ELF)
        return RANK_NONE; /* never JIT */
    unsigned major = e->arch / 10, minor = e->arch % 10;
    if (major != dev_major)
        return RANK_NONE;
    switch (e->suffix) {
    case 'a':
        return minor == dev_minor ? RANK_EXACT : RANK_NONE;
    case 'f':
        return dev_minor >= minor ? RANK_FAMILY : RANK_NONE;
    default:
        return dev_minor >= minor ? RANK_PLAIN : RANK_NONE;
    }
}

/* "sm_90a, sm_100a, compute_90a (ptx)" into out, truncated with "..." */
static void list_images(const bc__fatbin_entry *entries, size_t n, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char name[24];
        bc__fatbin_arch_name(&entries[i], name, sizeof name);
        const char *note = entries[i].kind == BC__FATBIN_KIND_ELF   ? ""
                           : entries[i].kind == BC__FATBIN_KIND_PTX ? " (PTX: JIT only when allowed)"
                                                                    : " (NVVM IR: never loaded)";
        int w = snprintf(out + used, cap - used, "%s%s%s", i ? ", " : "", name, note);
        if (w < 0 || (size_t)w >= cap - used) {
            if (cap >= 4)
                memcpy(out + cap - 4, "...", 4);
            return;
        }
        used += (size_t)w;
    }
    if (n == 0)
        snprintf(out, cap, "none");
}

typedef int (*rank_fn)(const bc__fatbin_entry *e, unsigned dev_major, unsigned dev_minor);

/* The best-ranked entry (ties: the highest arch, then file order), or n. */
static size_t best_of(const bc__fatbin_entry *entries, size_t n, int cc_major, int cc_minor, rank_fn rank)
{
    size_t best = n;
    int best_rank = RANK_NONE;
    for (size_t i = 0; i < n; i++) {
        int r = rank(&entries[i], (unsigned)cc_major, (unsigned)cc_minor);
        if (r == RANK_NONE)
            continue;
        if (r > best_rank || (r == best_rank && entries[i].arch > entries[best].arch)) {
            best = i;
            best_rank = r;
        }
    }
    return best;
}

/* The verdict on `best`: none, compressed, or the index. */
static bc_status finish(const bc__fatbin_entry *entries, size_t n, size_t best, int cc_major, int cc_minor, int jit,
                        size_t *out_index)
{
    if (best == n) {
        char list[400];
        list_images(entries, n, list, sizeof list);
        return BC_FAIL(BC_ERR_UNSUPPORTED_ARCH, "image selection",
                       "device sm_%d%d (compute capability %d.%d): no image runs on it%s; images present: %s",
                       cc_major, cc_minor, cc_major, cc_minor, jit ? " and no PTX compiles for it" : "", list);
    }
    if (entries[best].compression != BC__FATBIN_UNCOMPRESSED) {
        char name[24];
        return BC_FAIL(BC_ERR_FATBIN_COMPRESSED, "image selection",
                       "entry %zu (%s) chosen for sm_%d%d is %s-compressed; barecuda loads raw %s only", best,
                       bc__fatbin_arch_name(&entries[best], name, sizeof name), cc_major, cc_minor,
                       bc__fatbin_compression_name(entries[best].compression), jit ? "PTX" : "cubins");
    }
    *out_index = best;
    return BC_OK;
}

bc_status bc__select_image(const bc__fatbin_entry *entries, size_t n, int cc_major, int cc_minor,
                           size_t *out_index)
{
    if ((entries == NULL && n != 0) || out_index == NULL || cc_major < 0 || cc_minor < 0)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__select_image", "NULL argument or negative capability");
    size_t best = best_of(entries, n, cc_major, cc_minor, rank_of);
    return finish(entries, n, best, cc_major, cc_minor, 0, out_index);
}

unsigned bc__image_families(const bc__fatbin_entry *e)
{
    const unsigned major = e->arch / 10, all = 1u << BC__FAM_ALL;
    if (e->kind != BC__FATBIN_KIND_ELF)
        return 0;
    if (major == 8 || major == 12)
        return all | 1u << BC__FAM_SM80;
    if (major == 9) /* the optional groups (SM80, RES90) are a cubin of their own: runtime/image.c */
        return all | 1u << BC__FAM_SM90;
    if (major == 10 || major == 11)
        return all | 1u << BC__FAM_SM100;
    return all;
}

int bc__any_cubin_runs(const bc__fatbin_entry *entries, size_t n, int cc_major, int cc_minor)
{
    if (entries == NULL || cc_major < 0 || cc_minor < 0)
        return 0;
    return best_of(entries, n, cc_major, cc_minor, rank_of) != n;
}

/* How well PTX entry e can be compiled for the device: RANK_NONE if the
 * driver cannot. Plain compute_XY compiles for any device >= X.Y. */
static int ptx_rank_of(const bc__fatbin_entry *e, unsigned dev_major, unsigned dev_minor)
{
    if (e->kind != BC__FATBIN_KIND_PTX)
        return RANK_NONE;
    unsigned major = e->arch / 10, minor = e->arch % 10;
    switch (e->suffix) {
    case 'a':
        return major == dev_major && minor == dev_minor ? RANK_EXACT : RANK_NONE;
    case 'f':
        return major == dev_major && dev_minor >= minor ? RANK_FAMILY : RANK_NONE;
    default:
        return e->arch <= dev_major * 10 + dev_minor ? RANK_PLAIN : RANK_NONE;
    }
}

bc_status bc__select_ptx(const bc__fatbin_entry *entries, size_t n, int cc_major, int cc_minor,
                         size_t *out_index)
{
    if ((entries == NULL && n != 0) || out_index == NULL || cc_major < 0 || cc_minor < 0)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__select_ptx", "NULL argument or negative capability");
    size_t best = best_of(entries, n, cc_major, cc_minor, ptx_rank_of);
    return finish(entries, n, best, cc_major, cc_minor, 1, out_index);
}
