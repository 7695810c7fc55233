/* Internal: the 64-bit digest of the embedded fatbin (XXH64, seed 0).
 * A corruption check, not a signature: it catches a damaged or swapped
 * image, not a deliberate forgery. */
#ifndef BC_LOADER_DIGEST_H
#define BC_LOADER_DIGEST_H

#include <stddef.h>
#include <stdint.h>

uint64_t bc__xxh64(const void *data, size_t len, uint64_t seed);

#endif
