/* Internal: the embedded kernel image, loaded for one device as a module
 * (module_internal.h) plus the fast table of its manifest kernels that the
 * GEMM and the self-tests launch. */
#ifndef BC_RUNTIME_IMAGE_H
#define BC_RUNTIME_IMAGE_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "barecuda/device.h"
#include "barecuda/module.h"

typedef enum bc__kernel_id {
#define K(id, sym, fam, smem) BC_K_##id,
#include "manifest.h"
#undef K
    BC__KERNEL_COUNT
} bc__kernel_id;

typedef struct bc__image {
    bc_module *mod;                  /* NULL when not loaded */
    bc_module *groups;               /* sm_90a: the optional groups' cubin, when one is asked for; else NULL */
    bc_module *sk;                   /* sm_90a: the stream-K cubin, when BC_KERNELS_STREAM_K asks; else NULL */
    CUfunction fn[BC__KERNEL_COUNT]; /* NULL for kernels of other families */
    char arch[16];                   /* "sm_90a", "sm_100a", ... */
} bc__image;

typedef struct bc__image_timing {
    double check_us; /* parse + digest + selection */
    double load_us;  /* module load + kernel resolution + attributes */
} bc__image_timing;

/* Loads the embedded fatbin for dev (its compute capability) through the
 * module loader: selection by the documented rule, the selected entry's
 * digest against the one the build recorded for it, cuModuleLoadDataEx in place (the blob outlives every module), then
 * every kernel the manifest lists for that image's families is resolved into
 * img->fn and each one's dynamic shared-memory limit is set, but the
 * optional groups dev->cfg.kernel_groups does not ask for (their img->fn
 * entries stay NULL). On an sm_90a image the groups asked for come from
 * their own embedded cubin (the same loader: its digest checked), loaded
 * as img->groups, and the stream-K twins from theirs, as img->sk. On failure
 * *img is left empty and nothing is loaded. The device's context must be
 * current. The module is not on the device's list of user modules. */
bc_status bc__image_load(bc_device *dev, bc__image *img, bc__image_timing *out_timing);

/* The same from a caller-supplied container whose entry headers must hash
 * to headers_digest and whose selected entry to entry_digests[its index]
 * (entry_count entries; bc__loader_check_entry); buf must stay valid while
 * the module is loaded. Unit tests feed corrupt or foreign containers
 * through it. */
bc_status bc__image_load_from(bc_device *dev, bc__image *img, const uint8_t *buf, size_t len,
                              const uint64_t *entry_digests, size_t entry_count, uint64_t headers_digest,
                              bc__image_timing *out_timing);

/* Unloads the modules (if any) and clears *img; leaves bc_last_error() as
 * it was. */
void bc__image_unload(bc__image *img);

/* Why a kernel of optional group `group` (one BC_KERNELS_* bit) is not
 * resolved on dev: opened with skip_kernel_load, or without the group (the
 * flag named), for the messages of the plans that need it. */
const char *bc__image_group_missing(const bc_device *dev, uint32_t group);

#endif
