/* The pre-driver part of loading a module (check.h). */
#include <string.h>

#include "check.h"
#include "cubin.h"
#include "digest.h"
#include "error.h"
#include "select.h"

/* The container's entries, at most BC__LOADER_MAX_ENTRIES (more is
 * corrupt: over the limit). */
static bc_status parse_container(const uint8_t *buf, size_t len, bc__fatbin_entry *entries, size_t *n)
{
    bc_status st = bc__fatbin_parse(buf, len, entries, BC__LOADER_MAX_ENTRIES, n);
    if (st == BC_ERR_INVALID_ARGUMENT)
        return BC_FAIL(BC_ERR_FATBIN_CORRUPT, "fatbin", "more than %d entries: over the loader's limit",
                       BC__LOADER_MAX_ENTRIES);
    return st;
}

uint64_t bc__loader_headers_digest(const uint8_t *buf, const bc__fatbin_entry *entries, size_t n)
{
    uint64_t h[BC__LOADER_MAX_ENTRIES];
    for (size_t i = 0; i < n && i < BC__LOADER_MAX_ENTRIES; i++)
        h[i] = bc__xxh64(buf + entries[i].header_offset, entries[i].header_size, 0);
    return bc__xxh64(h, (n < BC__LOADER_MAX_ENTRIES ? n : BC__LOADER_MAX_ENTRIES) * sizeof h[0], 0);
}

/* What the build recorded of an embedded blob (bc__loader_check_entry):
 * one digest per entry and one over the entry headers. */
typedef struct entry_table {
    const uint64_t *digests;
    size_t count;
    uint64_t headers;
} entry_table;

/* Parse, then (with a table) the entry count and headers against it before
 * any header is trusted, then selection. */
static bc_status check_container(const uint8_t *buf, size_t len, int cc_major, int cc_minor, int allow_ptx_jit,
                                 const entry_table *tab, bc__loader_choice *c)
{
    bc__fatbin_entry entries[BC__LOADER_MAX_ENTRIES];
    size_t n = 0, sel = 0;
    bc_status st = parse_container(buf, len, entries, &n);
    if (st)
        return st;
    if (tab != NULL) { /* the count, then every entry header (kind, arch, flags: what selection reads) */
        if (n != tab->count)
            return BC_FAIL(BC_ERR_DIGEST_MISMATCH, "digest",
                           "the blob holds %zu entries; its digest table %zu (blob and table from different builds)",
                           n, tab->count);
        const uint64_t hd = bc__loader_headers_digest(buf, entries, n);
        if (hd != tab->headers)
            return BC_FAIL(BC_ERR_DIGEST_MISMATCH, "digest",
                           "the %zu entry headers hash to XXH64 0x%016llx; expected 0x%016llx", n,
                           (unsigned long long)hd, (unsigned long long)tab->headers);
    }
    if (allow_ptx_jit && !bc__any_cubin_runs(entries, n, cc_major, cc_minor)) {
        st = bc__select_ptx(entries, n, cc_major, cc_minor, &sel);
        c->jit = 1;
    } else {
        st = bc__select_image(entries, n, cc_major, cc_minor, &sel);
    }
    if (st)
        return st;
    c->entry = entries[sel];
    c->entries = (int)n;
    c->index = (int)sel;
    return BC_OK;
}

static bc_status check_cubin(const uint8_t *buf, size_t len, int cc_major, int cc_minor, bc__loader_choice *c)
{
    bc_status st = bc__cubin_describe(buf, len, &c->entry);
    if (st)
        return st;
    size_t sel = 0;
    st = bc__select_image(&c->entry, 1, cc_major, cc_minor, &sel);
    if (st)
        return st;
    c->plain_cubin = 1;
    c->entries = 1;
    return BC_OK;
}

/* The selected cubin read as loading will read it (its ELF header, section
 * names and toolkit note): a cubin the checks pass is one the load does
 * not refuse as corrupt. A container's ELF entry is first checked as a
 * plain cubin is (a whole CUDA ELF inside its payload: the driver reads it
 * by its own offsets, with no length) and must be built for the entry's SM
 * number (e_flags carries no a/f suffix). PTX is left to the driver; a
 * compressed entry is refused by selection before this. */
static bc_status read_selected(const uint8_t *buf, bc__loader_choice *c)
{
    if (c->jit || c->entry.compression != BC__FATBIN_UNCOMPRESSED)
        return BC_OK;
    const uint8_t *p = buf + c->entry.payload_offset;
    if (!c->plain_cubin) {
        bc__fatbin_entry d;
        bc_status st = bc__cubin_describe(p, (size_t)c->entry.payload_size, &d);
        if (st)
            return st;
        if (d.arch != c->entry.arch)
            return BC_FAIL(BC_ERR_FATBIN_CORRUPT, "fatbin", "the entry for sm_%u holds a cubin for sm_%u",
                           c->entry.arch, d.arch);
    }
    return bc__cubin_requirement(&c->entry, p, c->entry.payload_size, &c->req);
}

/* The parse and selection both checks share (tab: a container's entry
 * table, checked before selection; NULL: none), then, without a table, the
 * selected cubin read (with one, bc__loader_check_entry reads it once its
 * bytes have matched their digest: a changed byte is a digest mismatch). */
static bc_status check_select(const uint8_t *buf, size_t len, int cc_major, int cc_minor, int allow_ptx_jit,
                              const entry_table *tab, bc__loader_choice *c)
{
    bc_status st = bc__is_elf(buf, len) ? check_cubin(buf, len, cc_major, cc_minor, c)
                                        : check_container(buf, len, cc_major, cc_minor, allow_ptx_jit, tab, c);
    if (st)
        return st;
    if (tab == NULL) {
        st = read_selected(buf, c);
        if (st)
            return st;
    }
    bc__fatbin_arch_name(&c->entry, c->arch, sizeof c->arch);
    return BC_OK;
}

bc_status bc__loader_check(const uint8_t *buf, size_t len, const uint64_t *expected_digest, int cc_major,
                           int cc_minor, int allow_ptx_jit, bc__loader_choice *out)
{
    if (out == NULL || (buf == NULL && len != 0))
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__loader_check", "NULL out, or NULL bytes with length %zu",
                       len);
    bc__loader_choice c;
    memset(&c, 0, sizeof c);
    c.digest = buf ? bc__xxh64(buf, len, 0) : bc__xxh64("", 0, 0);
    if (expected_digest != NULL && c.digest != *expected_digest)
        return BC_FAIL(BC_ERR_DIGEST_MISMATCH, "digest",
                       "the %zu bytes hash to XXH64 0x%016llx; expected 0x%016llx", len,
                       (unsigned long long)c.digest, (unsigned long long)*expected_digest);
    bc_status st = check_select(buf, len, cc_major, cc_minor, allow_ptx_jit, NULL, &c);
    if (st)
        return st;
    *out = c;
    return BC_OK;
}

bc_status bc__loader_check_entry(const uint8_t *buf, size_t len, const uint64_t *entry_digests, size_t count,
                                 uint64_t headers_digest, int cc_major, int cc_minor, bc__loader_choice *out)
{
    if (out == NULL || (buf == NULL && len != 0) || entry_digests == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__loader_check_entry",
                       "NULL out or digest table, or NULL bytes with length %zu", len);
    bc__loader_choice c;
    memset(&c, 0, sizeof c);
    if (!bc__is_elf(buf, len)) { /* parse, the headers, selection, then only the selected entry hashed */
        const entry_table tab = {entry_digests, count, headers_digest};
        bc_status st = check_select(buf, len, cc_major, cc_minor, 0, &tab, &c);
        if (st)
            return st;
        const size_t lo = c.entry.header_offset, bytes = c.entry.payload_offset + c.entry.payload_size - lo;
        c.digest = bc__xxh64(buf + lo, bytes, 0);
        if (c.digest != entry_digests[c.index])
            return BC_FAIL(BC_ERR_DIGEST_MISMATCH, "digest",
                           "entry %d (%s, %zu bytes) hashes to XXH64 0x%016llx; expected 0x%016llx", c.index,
                           c.arch, bytes, (unsigned long long)c.digest, (unsigned long long)entry_digests[c.index]);
        st = read_selected(buf, &c);
        if (st)
            return st;
        *out = c;
        return BC_OK;
    }
    /* a plain cubin: one entry, the whole buffer, hashed before its ELF header is read */
    if (count != 1)
        return BC_FAIL(BC_ERR_DIGEST_MISMATCH, "digest",
                       "a plain cubin is one entry; its digest table has %zu (blob and table from different builds)",
                       count);
    c.digest = bc__xxh64(buf, len, 0);
    if (c.digest != entry_digests[0])
        return BC_FAIL(BC_ERR_DIGEST_MISMATCH, "digest",
                       "the %zu-byte cubin hashes to XXH64 0x%016llx; expected 0x%016llx", len,
                       (unsigned long long)c.digest, (unsigned long long)entry_digests[0]);
    bc_status st = check_select(buf, len, cc_major, cc_minor, 0, NULL, &c);
    if (st)
        return st;
    *out = c;
    return BC_OK;
}
