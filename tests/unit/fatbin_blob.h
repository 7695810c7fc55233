/* A builder of small hand-made (and hand-broken) fatbin containers for the
 * loader's unit tests: 64-byte entry headers as loader/fatbin.h reads them.
 * Include after fatbin.h. */
#ifndef BC_TESTS_FATBIN_BLOB_H
#define BC_TESTS_FATBIN_BLOB_H

#include <stdint.h>
#include <string.h>

static void wr16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void wr32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void wr64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* A small container builder for hand-made (and hand-broken) fatbins. */
typedef struct blob {
    uint8_t p[8192];
    size_t len;
    size_t container; /* offset of the open container */
} blob;

static void begin_container(blob *b)
{
    b->container = b->len;
    memset(b->p + b->len, 0, 16);
    wr32(b->p + b->len, BC__FATBIN_MAGIC);
    wr16(b->p + b->len + 4, 1);
    wr16(b->p + b->len + 6, 16);
    b->len += 16;
}

static void end_container(blob *b) { wr64(b->p + b->container + 8, b->len - b->container - 16); }

/* Appends an entry with a 64-byte header and a `payload`-byte payload
 * (an ELF magic for ELF entries, zeros otherwise). Returns its offset. */
static size_t add_entry(blob *b, uint16_t kind, uint32_t arch, uint64_t flags, size_t payload)
{
    size_t at = b->len;
    uint8_t *h = b->p + at;
    memset(h, 0, 64 + payload);
    wr16(h, kind);
    wr16(h + 2, 0x0101);
    wr32(h + 4, 64);
    wr64(h + 8, payload);
    wr16(h + 0x18, 8);
    wr16(h + 0x1A, kind == BC__FATBIN_KIND_ELF ? 1 : 8);
    wr32(h + 0x1C, arch);
    wr64(h + 0x28, flags | 0x11);
    if (kind == BC__FATBIN_KIND_ELF)
        memcpy(h + 64, "\177ELF", 4);
    b->len += 64 + payload;
    return at;
}

/* Two ELF entries (sm_90a, sm_100a) in one container. */
static void small_fatbin(blob *b)
{
    memset(b, 0, sizeof *b);
    begin_container(b);
    add_entry(b, BC__FATBIN_KIND_ELF, 90, BC__FATBIN_FLAG_ARCH_SPECIFIC, 64);
    add_entry(b, BC__FATBIN_KIND_ELF, 100, BC__FATBIN_FLAG_ARCH_SPECIFIC, 128);
    end_container(b);
}

#endif
