/* Internal: the embedded kernel image, selected and loaded for one device. */
#ifndef BC_LOADER_IMAGE_H
#define BC_LOADER_IMAGE_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "barecuda/status.h"

typedef enum bc__kernel_id {
#define K(id, sym, fam, smem) BC_K_##id,
#include "manifest.h"
#undef K
    BC__KERNEL_COUNT
} bc__kernel_id;

typedef struct bc__image {
    CUmodule module;               /* NULL when not loaded */
    CUfunction fn[BC__KERNEL_COUNT]; /* NULL for kernels of other families */
    char arch[16];                 /* "sm_90a", "sm_100a", ... */
} bc__image;

typedef struct bc__image_timing {
    double check_us; /* parse + digest + selection */
    double load_us;  /* module load + kernel resolution + attributes */
} bc__image_timing;

/* Parses the embedded fatbin, verifies its digest, selects the cubin for
 * compute capability cc_major.cc_minor by the documented rule, loads it with
 * cuModuleLoadDataEx (capturing the driver's error log), resolves every
 * kernel the manifest lists for that image's family and sets each one's
 * dynamic shared-memory limit. On failure *img is left empty and nothing is
 * loaded. The calling thread must have the device's context current. */
bc_status bc__image_load(bc__image *img, int cc_major, int cc_minor, bc__image_timing *out_timing);

/* The same from a caller-supplied container: `buf[0, len)` must hash
 * (XXH64, seed 0) to `digest`. bc__image_load is this over the embedded blob
 * (bc__fatbin_bytes, bc__fatbin_size, bc__fatbin_digest). The selected
 * cubin is handed to the driver in place (no copy); keep buf valid while the
 * module is loaded (the embedded blob always is). Unit tests feed corrupt or
 * foreign containers through it. */
bc_status bc__image_load_from(bc__image *img, const uint8_t *buf, size_t len, uint64_t digest, int cc_major,
                              int cc_minor, bc__image_timing *out_timing);

/* Unloads the module (if any) and clears *img. */
void bc__image_unload(bc__image *img);

#endif
