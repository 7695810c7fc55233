/* The strict fatbin container parser (see fatbin.h for what it accepts).
 *
 * Every read is preceded by a check that the bytes lie inside the current
 * region (buffer, container or entry header), written as "size <= room"
 * comparisons on values already known to be in range, so no sum can wrap. */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "fatbin.h"

static uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v); /* little-endian hosts only (x86-64, aarch64) */
    return v;
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

#define CORRUPT(...) BC_FAIL(BC_ERR_FATBIN_CORRUPT, "fatbin", __VA_ARGS__)

/* 1 if [off, off+n) lies inside [lo, hi) (all relative to the entry start). */
static int range_within(uint64_t off, uint64_t n, uint64_t lo, uint64_t hi)
{
    return off >= lo && off <= hi && n <= hi - off;
}

/* Checks the identifier string and the options record: both live in the
 * part of the entry header after the 64-byte base (fatbinary 13.0 puts them
 * there; nothing else points into the header). */
static bc_status check_header_refs(const uint8_t *e, uint32_t hs, size_t index, size_t at)
{
    uint32_t id_off = rd32(e + 0x20), id_len = rd32(e + 0x24);
    if (id_off == 0 && id_len != 0)
        return CORRUPT("entry %zu at %zu: identifier length %u with no offset", index, at, id_len);
    if (id_off != 0 && !range_within(id_off, id_len, BC__FATBIN_ENTRY_MIN_HEADER, hs))
        return CORRUPT("entry %zu at %zu: identifier [%u, %u+%u) lies outside the header extension [64, %u)",
                       index, at, id_off, id_off, id_len, hs);
    uint32_t opt = rd32(e + 0x14);
    if (opt == 0)
        return BC_OK;
    if (!range_within(opt, 8, BC__FATBIN_ENTRY_MIN_HEADER, hs))
        return CORRUPT("entry %zu at %zu: options record [%u, %u+8) lies outside the header extension [64, %u)",
                       index, at, opt, opt, hs);
    uint32_t s_off = rd32(e + opt), s_len = rd32(e + opt + 4);
    if (s_len != 0 && !range_within(s_off, s_len, BC__FATBIN_ENTRY_MIN_HEADER, hs))
        return CORRUPT("entry %zu at %zu: options string [%u, %u+%u) lies outside the header extension [64, %u)",
                       index, at, s_off, s_off, s_len, hs);
    return BC_OK;
}

/* Compression fields: a flag picks the codec; its sizes must be coherent. */
static bc_status check_compression(const uint8_t *e, uint64_t ps, size_t index, size_t at,
                                   bc__fatbin_compression *out_c)
{
    uint64_t flags = rd64(e + 0x28);
    uint32_t cs = rd32(e + 0x10);
    uint64_t ds = rd64(e + 0x38);
    int lz4 = (flags & BC__FATBIN_FLAG_LZ4) != 0, zstd = (flags & BC__FATBIN_FLAG_ZSTD) != 0;
    if (lz4 && zstd)
        return CORRUPT("entry %zu at %zu: flags 0x%llx claim both LZ4 and ZSTD compression", index, at,
                       (unsigned long long)flags);
    if (!lz4 && !zstd) {
        if (cs != 0 || ds != 0)
            return CORRUPT("entry %zu at %zu: compressed size %u, decompressed size %llu but no compression flag "
                           "(flags 0x%llx)",
                           index, at, cs, (unsigned long long)ds, (unsigned long long)flags);
        *out_c = BC__FATBIN_UNCOMPRESSED;
        return BC_OK;
    }
    if (cs == 0 || cs > ps)
        return CORRUPT("entry %zu at %zu: compressed size %u does not fit the %llu-byte payload", index, at,
                       cs, (unsigned long long)ps);
    if (ds == 0)
        return CORRUPT("entry %zu at %zu: compressed entry with decompressed size 0", index, at);
    *out_c = lz4 ? BC__FATBIN_LZ4 : BC__FATBIN_ZSTD;
    return BC_OK;
}

/* Parses the entry at buf[at] whose container ends at `end` (at < end).
 * On BC_OK fills *out and sets *out_next to the first byte after it. */
static bc_status parse_entry(const uint8_t *buf, size_t at, size_t end, size_t index, uint32_t container,
                             bc__fatbin_entry *out, size_t *out_next)
{
    const size_t room = end - at;
    if (room < BC__FATBIN_ENTRY_MIN_HEADER)
        return CORRUPT("entry %zu at %zu: only %zu bytes left before the container end at %zu, "
                       "less than a 64-byte entry header", index, at, room, end);
    const uint8_t *e = buf + at;
    uint16_t kind = rd16(e), ev = rd16(e + 2);
    uint32_t hs = rd32(e + 4);
    uint64_t ps = rd64(e + 8);
    if (hs < BC__FATBIN_ENTRY_MIN_HEADER || hs % 8 != 0)
        return CORRUPT("entry %zu at %zu: header size %u (must be >= 64 and a multiple of 8)", index, at, hs);
    if (hs > room)
        return CORRUPT("entry %zu at %zu: header [%zu, %zu+%u) runs past the container end at %zu", index, at,
                       at, at, hs, end);
    if (ev != BC__FATBIN_ENTRY_VERSION)
        return CORRUPT("entry %zu at %zu: entry version 0x%04x, expected 0x0101", index, at, ev);
    if (kind != BC__FATBIN_KIND_PTX && kind != BC__FATBIN_KIND_ELF && kind != BC__FATBIN_KIND_NVVM)
        return CORRUPT("entry %zu at %zu: unknown kind %u", index, at, kind);
    const size_t off = at + hs; /* hs <= room: no wrap */
    if (ps == 0)
        return CORRUPT("entry %zu at %zu: zero-sized payload", index, at);
    if (ps % 8 != 0)
        return CORRUPT("entry %zu at %zu: payload size %llu is not a multiple of 8", index, at,
                       (unsigned long long)ps);
    if (ps > room - hs)
        return CORRUPT("entry %zu: payload [%zu, %zu+%llu) runs past the container end at %zu", index, off,
                       off, (unsigned long long)ps, end);
    bc__fatbin_compression comp;
    bc_status st = check_compression(e, ps, index, at, &comp);
    if (st)
        return st;
    uint64_t flags = rd64(e + 0x28);
    int a = (flags & BC__FATBIN_FLAG_ARCH_SPECIFIC) != 0, f = (flags & BC__FATBIN_FLAG_FAMILY) != 0;
    if (a && f)
        return CORRUPT("entry %zu at %zu: flags 0x%llx mark it both arch-specific (a) and family (f)", index,
                       at, (unsigned long long)flags);
    uint32_t arch = rd32(e + 0x1C);
    if (arch < 10 || arch > 999)
        return CORRUPT("entry %zu at %zu: arch %u is not an SM number", index, at, arch);
    st = check_header_refs(e, hs, index, at);
    if (st)
        return st;
    if (kind == BC__FATBIN_KIND_ELF && comp == BC__FATBIN_UNCOMPRESSED && memcmp(buf + off, "\177ELF", 4) != 0)
        return CORRUPT("entry %zu: ELF payload at %zu does not start with the ELF magic", index, off);

    memset(out, 0, sizeof *out);
    out->container = container;
    out->kind = kind;
    out->entry_version = ev;
    out->header_size = hs;
    out->header_offset = at;
    out->payload_offset = off;
    out->payload_size = (size_t)ps;
    out->compressed_size = rd32(e + 0x10);
    out->decompressed_size = rd64(e + 0x38);
    out->arch = arch;
    out->suffix = a ? 'a' : f ? 'f' : '\0';
    out->flags = flags;
    out->compression = comp;
    out->code_minor = rd16(e + 0x18);
    out->code_major = rd16(e + 0x1A);
    out->identifier_offset = rd32(e + 0x20);
    out->identifier_len = rd32(e + 0x24);
    *out_next = off + (size_t)ps; /* ps <= room - hs: ends at or before `end` */
    return BC_OK;
}

/* Validates the container header at buf[at]; on BC_OK *out_end is the end
 * of its body (at + 16 + fatSize <= len). */
static bc_status parse_container_header(const uint8_t *buf, size_t len, size_t at, uint32_t ci, size_t *out_end)
{
    const size_t avail = len - at;
    if (avail < BC__FATBIN_HEADER_SIZE)
        return CORRUPT("container %u at %zu: %zu trailing bytes, shorter than a 16-byte container header", ci,
                       at, avail);
    const uint8_t *h = buf + at;
    uint32_t magic = rd32(h);
    uint16_t version = rd16(h + 4), hsize = rd16(h + 6);
    uint64_t fat = rd64(h + 8);
    if (magic != BC__FATBIN_MAGIC)
        return CORRUPT("container %u at %zu: magic 0x%08x, expected 0x%08x", ci, at, magic, BC__FATBIN_MAGIC);
    if (version != BC__FATBIN_VERSION)
        return CORRUPT("container %u at %zu: version %u, expected 1", ci, at, version);
    if (hsize != BC__FATBIN_HEADER_SIZE)
        return CORRUPT("container %u at %zu: header size %u, expected 16", ci, at, hsize);
    if (fat % 8 != 0)
        return CORRUPT("container %u at %zu: fatSize %llu is not a multiple of 8", ci, at,
                       (unsigned long long)fat);
    if (fat > avail - BC__FATBIN_HEADER_SIZE)
        return CORRUPT("container %u at %zu: body [%zu, %zu+%llu) runs past the buffer end at %zu", ci, at,
                       at + 16, at + 16, (unsigned long long)fat, len);
    if (fat == 0)
        return CORRUPT("container %u at %zu: no entries (fatSize 0)", ci, at);
    *out_end = at + BC__FATBIN_HEADER_SIZE + (size_t)fat;
    return BC_OK;
}

bc_status bc__fatbin_parse(const uint8_t *buf, size_t len, bc__fatbin_entry *entries, size_t cap,
                           size_t *out_count)
{
    if (out_count == NULL || (buf == NULL && len != 0) || (entries == NULL && cap != 0))
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__fatbin_parse", "NULL buffer, table or out_count");
    if (len == 0)
        return CORRUPT("empty buffer: no fatbin container");
    size_t count = 0, at = 0;
    uint32_t ci = 0;
    while (at < len) {
        size_t end = 0;
        bc_status st = parse_container_header(buf, len, at, ci, &end);
        if (st)
            return st;
        size_t p = at + BC__FATBIN_HEADER_SIZE;
        while (p < end) {
            bc__fatbin_entry scratch, *e = count < cap ? &entries[count] : &scratch;
            size_t next = 0;
            st = parse_entry(buf, p, end, count, ci, e, &next);
            if (st)
                return st;
            count++;
            p = next;
        }
        at = end;
        ci++;
    }
    if (entries != NULL && count > cap)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__fatbin_parse",
                       "the fatbin is well formed but holds %zu entries, more than the table's %zu", count, cap);
    *out_count = count;
    return BC_OK;
}

char *bc__fatbin_arch_name(const bc__fatbin_entry *e, char *out, size_t cap)
{
    if (cap == 0)
        return out;
    const char *prefix = e->kind == BC__FATBIN_KIND_ELF ? "sm" : "compute";
    if (e->suffix)
        snprintf(out, cap, "%s_%u%c", prefix, e->arch, e->suffix);
    else
        snprintf(out, cap, "%s_%u", prefix, e->arch);
    return out;
}

const char *bc__fatbin_kind_name(uint16_t kind)
{
    switch (kind) {
    case BC__FATBIN_KIND_PTX:
        return "ptx";
    case BC__FATBIN_KIND_ELF:
        return "elf";
    case BC__FATBIN_KIND_NVVM:
        return "nvvm";
    default:
        return "?";
    }
}

const char *bc__fatbin_compression_name(bc__fatbin_compression c)
{
    switch (c) {
    case BC__FATBIN_LZ4:
        return "lz4";
    case BC__FATBIN_ZSTD:
        return "zstd";
    default:
        return "none";
    }
}
