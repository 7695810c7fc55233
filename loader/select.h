/* Internal: choosing the cubin a device runs, and the image's kernel family.
 *
 * The rule (also in README.md): only ELF (cubin) entries are candidates of
 * bc__select_image; PTX is chosen only by bc__select_ptx, for a caller that
 * opted in to JIT, and NVVM entries never.
 * Device compute capability M.m, entry sm_XY with X = arch / 10, Y = arch % 10:
 *
 *   sm_XYa (arch-specific) runs only when X.Y == M.m exactly;
 *   sm_XYf (family)        runs when X == M and m >= Y;
 *   sm_XY  (plain)         runs when X == M and m >= Y.
 *
 * Among the images that run, an exact arch-specific image beats a family
 * image, which beats a plain one; within a class the highest minor wins (the
 * image closest to the device), then the first in file order. With the
 * images barecuda embeds (sm_80, sm_90a, sm_100a, sm_100f, sm_103a, sm_110a,
 * sm_120): CC 8.x -> sm_80; 9.0 -> sm_90a; 10.0 -> sm_100a; 10.1 ->
 * sm_100f; 10.3 -> sm_103a; 11.0 -> sm_110a; 12.x -> sm_120; anything else
 * (7.5 and older, 9.x > 9.0) -> BC_ERR_UNSUPPORTED_ARCH.
 *
 * The winner is chosen before its compression is looked at: a compressed
 * winner is BC_ERR_FATBIN_COMPRESSED, never silently skipped for a worse one.
 */
#ifndef BC_LOADER_SELECT_H
#define BC_LOADER_SELECT_H

#include <stddef.h>

#include "fatbin.h"

/* The manifest families (kernels_ptx/manifest.h): which kernels an image has. */
typedef enum bc__family {
    BC__FAM_NONE = 0, /* an image no manifest family describes: only ALL kernels */
    BC__FAM_ALL,
    BC__FAM_SM90,
    BC__FAM_SM100,
    BC__FAM_SM80, /* the portable mma.sync kernels */
    BC__FAM_RES90, /* the resident executor's kernels (sm_90a) */
    BC__FAM_SK90,  /* the whole-tile kernels with stream-K (sm_90a) */
} bc__family;

/* Picks the entry of entries[0..n) that a device of compute capability
 * cc_major.cc_minor runs, by the rule above, writing its index to
 * *out_index. BC_ERR_UNSUPPORTED_ARCH (naming the device's sm_XY and every
 * image present) when none runs; BC_ERR_FATBIN_COMPRESSED when the chosen
 * one is compressed; BC_ERR_INVALID_ARGUMENT for NULL pointers or a negative
 * capability. *out_index is written only on BC_OK. */
bc_status bc__select_image(const bc__fatbin_entry *entries, size_t n, int cc_major, int cc_minor,
                           size_t *out_index);

/* 1 if some cubin of entries[0..n) runs on cc_major.cc_minor by the rule
 * above; records nothing (a probe, not a failure). */
int bc__any_cubin_runs(const bc__fatbin_entry *entries, size_t n, int cc_major, int cc_minor);

/* The PTX entry the driver would JIT-compile for the device, for callers
 * that opted in to JIT and found no cubin that runs: compute_XYa only on
 * X.Y exactly, compute_XYf on X.m with m >= Y, plain compute_XY on any
 * device of capability >= X.Y. Exact beats family beats plain, then the
 * highest arch, then file order. BC_ERR_UNSUPPORTED_ARCH (naming every
 * image) when none compiles for it, BC_ERR_FATBIN_COMPRESSED when the
 * chosen one is compressed. *out_index is written only on BC_OK. */
bc_status bc__select_ptx(const bc__fatbin_entry *entries, size_t n, int cc_major, int cc_minor,
                         size_t *out_index);

/* The manifest families a cubin carries, as a mask of (1u << bc__family):
 * every cubin has ALL; sm_8x and sm_12x add SM80 (the portable image);
 * sm_9x adds SM90 (the portable kernels, SM80, and the resident executor's,
 * RES90, are built for sm_90a too, into a cubin of their own that
 * runtime/image.c loads beside the image when asked); sm_10x and sm_11x (the Blackwell
 * images, built from one source) add SM100. A PTX or NVVM entry: 0. */
unsigned bc__image_families(const bc__fatbin_entry *e);

#endif
