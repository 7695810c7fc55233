/* Plain cubins: the ELF header checks and the e_flags layout (cubin.h). */
#include <string.h>

#include "cubin.h"
#include "error.h"

#define ELF_HEADER 64u
#define SHT_NOBITS 8u

static uint64_t rd(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

#define CORRUPT(...) BC_FAIL(BC_ERR_FATBIN_CORRUPT, "cubin", __VA_ARGS__)

int bc__is_elf(const uint8_t *buf, size_t len)
{
    return buf != NULL && len >= 4 && memcmp(buf, "\177ELF", 4) == 0;
}

/* 1 if [off, off + n) lies inside [0, len). */
static int inside(uint64_t off, uint64_t n, size_t len)
{
    return off <= len && n <= len - off;
}

/* A table of `count` entries of `entsize` bytes at `off` (entsize >= min). */
static bc_status check_table(const char *what, uint64_t off, uint64_t count, uint64_t entsize, uint64_t min,
                             size_t len)
{
    if (count == 0)
        return BC_OK;
    if (entsize < min)
        return CORRUPT("%s entries are %llu bytes, less than %llu", what, (unsigned long long)entsize,
                       (unsigned long long)min);
    if (!inside(off, count * entsize, len)) /* count, entsize < 2^16: no wrap */
        return CORRUPT("%s [%llu, +%llu x %llu) runs past the %zu-byte file", what, (unsigned long long)off,
                       (unsigned long long)count, (unsigned long long)entsize, len);
    return BC_OK;
}

/* Every section with file contents lies inside the file. */
static bc_status check_sections(const uint8_t *b, size_t len, uint64_t shoff, uint64_t shnum, uint64_t shent)
{
    for (uint64_t i = 0; i < shnum; i++) {
        const uint8_t *sh = b + shoff + i * shent;
        if (rd(sh + 4, 4) == SHT_NOBITS)
            continue;
        uint64_t off = rd(sh + 0x18, 8), size = rd(sh + 0x20, 8);
        if (!inside(off, size, len))
            return CORRUPT("section %llu [%llu, +%llu) runs past the %zu-byte file", (unsigned long long)i,
                           (unsigned long long)off, (unsigned long long)size, len);
    }
    return BC_OK;
}

bc_status bc__cubin_describe(const uint8_t *b, size_t len, bc__fatbin_entry *out)
{
    if (b == NULL || out == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__cubin_describe", "NULL buffer or out");
    if (len < ELF_HEADER || !bc__is_elf(b, len))
        return CORRUPT("%zu bytes: not a whole ELF header", len);
    if (b[4] != 2 || b[5] != 1)
        return CORRUPT("ELF class %u, data %u: a cubin is 64-bit little-endian (2, 1)", b[4], b[5]);
    uint64_t machine = rd(b + 18, 2);
    if (machine != BC__ELF_MACHINE_CUDA)
        return CORRUPT("ELF machine %llu is not CUDA (%u)", (unsigned long long)machine, BC__ELF_MACHINE_CUDA);
    uint64_t phoff = rd(b + 0x20, 8), shoff = rd(b + 0x28, 8);
    uint64_t phent = rd(b + 0x36, 2), phnum = rd(b + 0x38, 2);
    uint64_t shent = rd(b + 0x3a, 2), shnum = rd(b + 0x3c, 2);
    bc_status st = check_table("section header table", shoff, shnum, shent, 0x40, len);
    if (!st)
        st = check_table("program header table", phoff, phnum, phent, 0x38, len);
    if (!st)
        st = check_sections(b, len, shoff, shnum, shent);
    if (st)
        return st;
    if (shnum == 0)
        return CORRUPT("no section headers: not a loadable cubin");
    uint32_t flags = (uint32_t)rd(b + 0x30, 4);
    unsigned abi = b[8];
    unsigned sm = abi >= 8 ? (flags >> 8) & 0xffu : flags & 0xffu;
    int accel = abi >= 8 ? (flags & 0x8u) != 0 : (flags & 0x800u) != 0;
    if (sm < 10)
        return CORRUPT("e_flags 0x%08x (ELF ABI %u) name no SM architecture", flags, abi);
    memset(out, 0, sizeof *out);
    out->kind = BC__FATBIN_KIND_ELF;
    out->payload_offset = 0;
    out->payload_size = len;
    out->arch = sm;
    out->suffix = accel ? 'a' : '\0';
    out->flags = flags;
    out->compression = BC__FATBIN_UNCOMPRESSED;
    out->code_major = (uint16_t)abi;
    return BC_OK;
}
