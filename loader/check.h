/* Internal: the whole pre-driver part of loading a module, pure (no driver):
 * digest, container parse (or plain cubin), image selection. The runtime's
 * module loader calls it for the embedded image and for user modules alike;
 * `barecuda fatbin` and the fuzz harness call it without a GPU. */
#ifndef BC_LOADER_CHECK_H
#define BC_LOADER_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "cubin.h"
#include "fatbin.h"

/* Entries a container may hold: more is refused as over the limit. */
#define BC__LOADER_MAX_ENTRIES 64

typedef struct bc__loader_choice {
    bc__fatbin_entry entry; /* the selected entry; a plain cubin is one entry covering the buffer */
    int plain_cubin;        /* 1: the buffer is a cubin, not a container */
    int jit;                /* 1: the entry is PTX, to be compiled by the driver */
    int entries;            /* entries in the container (1 for a plain cubin) */
    int index;              /* the selected entry's position in the container (0 for a plain cubin) */
    uint64_t digest;        /* XXH64 (seed 0) of the bytes checked: the whole buffer (bc__loader_check),
                             * or the selected entry's header and payload (bc__loader_check_entry) */
    char arch[24];          /* "sm_90a", or "compute_80" for PTX */
    bc__cubin_req req;      /* a cubin's (not jit): what it requires of the driver (bc__cubin_req_check) */
} bc__loader_choice;

/* In this order: when expected_digest is non-NULL the buffer must hash to
 * it (BC_ERR_DIGEST_MISMATCH naming both values); a buffer starting with the
 * ELF magic is a plain cubin (cubin.h), anything else a fatbin container
 * (fatbin.h; more than BC__LOADER_MAX_ENTRIES entries is
 * BC_ERR_FATBIN_CORRUPT, over the limit); then the cubin for the device
 * (select.h), or, only when allow_ptx_jit and no cubin runs there, the PTX
 * entry the driver can compile. Errors: BC_ERR_FATBIN_CORRUPT,
 * BC_ERR_DIGEST_MISMATCH, BC_ERR_UNSUPPORTED_ARCH, BC_ERR_FATBIN_COMPRESSED,
 * BC_ERR_INVALID_ARGUMENT (NULL out, NULL buf with len > 0). *out is written
 * only on success. */
bc_status bc__loader_check(const uint8_t *buf, size_t len, const uint64_t *expected_digest, int cc_major,
                           int cc_minor, int allow_ptx_jit, bc__loader_choice *out);

/* The check of a blob whose build recorded one digest per entry (the
 * embedded fatbin). A container: parsed (every entry's bounds), its entry
 * headers (what selection reads: kind, arch, flags) hashed and compared
 * with headers_digest (bc__loader_headers_digest), the image selected as
 * bc__loader_check does without PTX, then only the selected entry's
 * header and payload hashed and compared with entry_digests[index]. A
 * plain cubin: the whole buffer against entry_digests[0] before its ELF
 * header is used (headers_digest is not read). The other entries' payloads
 * are bounds-checked but not hashed, so a check costs the selected image's
 * bytes rather than the whole blob's. A table whose count differs from the
 * entries is BC_ERR_DIGEST_MISMATCH (blob and table from different
 * builds), as is any hash that differs (naming the entry and both values).
 * Other errors as bc__loader_check; *out is written only on success. */
bc_status bc__loader_check_entry(const uint8_t *buf, size_t len, const uint64_t *entry_digests, size_t count,
                                 uint64_t headers_digest, int cc_major, int cc_minor, bc__loader_choice *out);

/* The digest of a container's entry headers, as the build records it and
 * bc__loader_check_entry checks it: XXH64 of the array of each header's
 * XXH64 (n <= BC__LOADER_MAX_ENTRIES entries, in order). */
uint64_t bc__loader_headers_digest(const uint8_t *buf, const bc__fatbin_entry *entries, size_t n);

#endif
