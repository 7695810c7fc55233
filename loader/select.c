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
        int w = snprintf(out + used, cap - used, "%s%s%s", i ? ", " : "", name,
                         entries[i].kind == BC__FATBIN_KIND_ELF ? "" : " (not loadable: no JIT)");
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

bc_status bc__select_image(const bc__fatbin_entry *entries, size_t n, int cc_major, int cc_minor,
                           size_t *out_index)
{
    if ((entries == NULL && n != 0) || out_index == NULL || cc_major < 0 || cc_minor < 0)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__select_image", "NULL argument or negative capability");
    size_t best = n;
    int best_rank = RANK_NONE;
    unsigned best_minor = 0;
    for (size_t i = 0; i < n; i++) {
        int r = rank_of(&entries[i], (unsigned)cc_major, (unsigned)cc_minor);
        unsigned minor = entries[i].arch % 10;
        if (r == RANK_NONE)
            continue;
        if (r > best_rank || (r == best_rank && minor > best_minor)) {
            best = i;
            best_rank = r;
            best_minor = minor;
        }
    }
    if (best == n) {
        char list[400];
        list_images(entries, n, list, sizeof list);
        return BC_FAIL(BC_ERR_UNSUPPORTED_ARCH, "image selection",
                       "device sm_%d%d (compute capability %d.%d): no image runs on it; images present: %s",
                       cc_major, cc_minor, cc_major, cc_minor, list);
    }
    if (entries[best].compression != BC__FATBIN_UNCOMPRESSED) {
        char name[24];
        return BC_FAIL(BC_ERR_FATBIN_COMPRESSED, "image selection",
                       "entry %zu (%s) chosen for sm_%d%d is %s-compressed; barecuda loads raw cubins only",
                       best, bc__fatbin_arch_name(&entries[best], name, sizeof name), cc_major, cc_minor,
                       bc__fatbin_compression_name(entries[best].compression));
    }
    *out_index = best;
    return BC_OK;
}

unsigned bc__image_families(const bc__fatbin_entry *e)
{
    const unsigned major = e->arch / 10, all = 1u << BC__FAM_ALL;
    if (e->kind != BC__FATBIN_KIND_ELF)
        return 0;
    if (major == 8 || major == 12)
        return all | 1u << BC__FAM_SM80;
    if (major == 9)
        return all | 1u << BC__FAM_SM90 | 1u << BC__FAM_SM80;
    if (major == 10 || major == 11)
        return all | 1u << BC__FAM_SM100;
    return all;
}
