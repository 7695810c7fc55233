/* Internal: a strict parser for the fatbin container (ptx-facts.md §1).
 *
 * Layout (little-endian, every structure 8-byte aligned): one or more
 * containers back to back, each a 16-byte header {u32 magic 0xBA55ED50,
 * u16 version 1, u16 headerSize 16, u64 fatSize} followed by fatSize bytes of
 * entries; each entry is a header of at least 64 bytes followed by its
 * payload, the next entry starting right after it.
 *
 * The parser never reads outside [buf, buf+len), whatever the bytes, and
 * accepts only buffers it understands completely: see bc__fatbin_parse.
 */
#ifndef BC_LOADER_FATBIN_H
#define BC_LOADER_FATBIN_H

#include <stddef.h>
#include <stdint.h>

#include "barecuda/status.h"

#define BC__FATBIN_MAGIC 0xBA55ED50u
#define BC__FATBIN_VERSION 1u
#define BC__FATBIN_HEADER_SIZE 16u
#define BC__FATBIN_ENTRY_MIN_HEADER 64u
#define BC__FATBIN_ENTRY_VERSION 0x0101u

/* fatBinaryCodeKind */
#define BC__FATBIN_KIND_PTX 1u
#define BC__FATBIN_KIND_ELF 2u
#define BC__FATBIN_KIND_NVVM 8u /* NVVM / LTO IR: listed, never loaded */

/* Entry flag bits. The a/f bits were verified locally (CUDA 13.0 ptxas +
 * fatbinary): sm_90a/100a/103a/110a/120a entries carry 0x100000,
 * sm_100f/110f/120f entries 0x200000, plain sm_XY entries neither. */
#define BC__FATBIN_FLAG_64BIT 0x1ull
#define BC__FATBIN_FLAG_LZ4 0x2000ull
#define BC__FATBIN_FLAG_ZSTD 0x8000ull
#define BC__FATBIN_FLAG_ARCH_SPECIFIC 0x100000ull /* the 'a' suffix */
#define BC__FATBIN_FLAG_FAMILY 0x200000ull        /* the 'f' suffix */

typedef enum bc__fatbin_compression {
    BC__FATBIN_UNCOMPRESSED = 0,
    BC__FATBIN_LZ4 = 1,
    BC__FATBIN_ZSTD = 2,
} bc__fatbin_compression;

typedef struct bc__fatbin_entry {
    uint32_t container;        /* index of the container holding it */
    uint16_t kind;             /* BC__FATBIN_KIND_* */
    uint16_t entry_version;    /* 0x0101 */
    uint32_t header_size;      /* entry header bytes (64, 80, 96, 112 seen) */
    size_t header_offset;      /* entry start, relative to buf */
    size_t payload_offset;     /* relative to buf */
    size_t payload_size;       /* bytes, padding included (multiple of 8) */
    uint32_t compressed_size;  /* exact compressed bytes; 0 when uncompressed */
    uint64_t decompressed_size;/* 0 when uncompressed */
    uint32_t arch;             /* SM number without suffix: 90, 100, 103 ... */
    char suffix;               /* 'a', 'f' or '\0' (from the flags) */
    uint64_t flags;
    bc__fatbin_compression compression;
    uint16_t code_major;       /* PTX ISA version (PTX) / cubin code version (ELF) */
    uint16_t code_minor;
    uint32_t identifier_offset; /* relative to the entry start; 0 = none */
    uint32_t identifier_len;
} bc__fatbin_entry;

/* Parses every container in buf[0, len). On BC_OK, entries[0..*out_count)
 * describe the entries in file order and every payload range lies inside
 * its container. `entries == NULL` with `cap == 0` only counts (and
 * validates). Rejected with BC_ERR_FATBIN_CORRUPT and a message naming the
 * container, entry and byte offsets: an empty buffer, wrong magic, unknown
 * container version, header size not 16, fatSize not a multiple of 8 or past
 * the buffer end, a container with no entries, trailing bytes shorter than a
 * header, an entry header under 64 bytes / not a multiple of 8 / past the
 * container, unknown entry version or kind, a payload that is empty, not a
 * multiple of 8 or past the container, entries that do not tile the
 * container exactly (overlap or gap), both compression bits or both suffix
 * bits, a compressed size above the payload or a compressed or
 * decompressed size set without a compression flag, an identifier or options record outside the entry header, an
 * implausible arch, an uncompressed ELF payload without the ELF magic.
 * A well-formed buffer with more than `cap` entries gives
 * BC_ERR_INVALID_ARGUMENT ("more than cap entries"): the bytes are fine, the
 * caller's table is too small. *out_count is written only on success; on
 * failure the contents of entries[] are unspecified. */
bc_status bc__fatbin_parse(const uint8_t *buf, size_t len, bc__fatbin_entry *entries, size_t cap,
                           size_t *out_count);

/* Writes "sm_90a" / "sm_100f" / "sm_86" (ELF) or "compute_90a" (PTX, NVVM)
 * into out (always NUL-terminated when cap > 0). Returns out. */
char *bc__fatbin_arch_name(const bc__fatbin_entry *e, char *out, size_t cap);

/* "ptx", "elf", "nvvm" or "?" */
const char *bc__fatbin_kind_name(uint16_t kind);

/* "none", "lz4", "zstd" */
const char *bc__fatbin_compression_name(bc__fatbin_compression c);

#endif
