/* Cubins without a driver (cubin.h): the plain-cubin ELF checks and its
 * e_flags layout, and the driver a cubin requires from its header and notes. */
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

/* ---------------------------------------------------------------- the driver a cubin requires */


#define FLOOR 12000 /* barecuda's own minimum: the driver table is resolved at CUDA 12.0 */
#define SHT_NOTE 7u

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

int bc__arch_min_driver(unsigned arch, char suffix)
{
    if (arch == 110)
        return 13000;
    if (arch == 103 || arch == 121 || (suffix == 'f' && arch >= 100))
        return 12090;
    if (arch >= 100)
        return 12080;
    return FLOOR;
}

/* [off, off + n) inside [0, len)? */
static int inside_n(size_t len, uint64_t off, uint64_t n) { return inside(off, n, len); }

/* "release X.Y" in the descriptor of the .note.nv.tkinfo note (ptxas's
 * version banner), as 10 * X + Y; 0 when the note or the text is absent. */
static uint32_t release_in(const uint8_t *d, uint64_t n)
{
    static const char key[] = "release ";
    for (uint64_t i = 0; i + sizeof key - 1 + 3 <= n; i++) {
        if (memcmp(d + i, key, sizeof key - 1) != 0)
            continue;
        uint64_t j = i + sizeof key - 1;
        uint32_t major = 0, minor = 0;
        while (j < n && d[j] >= '0' && d[j] <= '9' && major < 1000)
            major = major * 10u + (uint32_t)(d[j++] - '0');
        if (j + 1 >= n || d[j] != '.' || d[j + 1] < '0' || d[j + 1] > '9' || major == 0 || major >= 100)
            return 0;
        minor = (uint32_t)(d[j + 1] - '0');
        return major * 10u + minor;
    }
    return 0;
}

static bc_status tkinfo_release(const uint8_t *elf, size_t len, uint32_t *out)
{
    const uint64_t shoff = rd64(elf + 0x28);
    const uint16_t shentsize = rd16(elf + 0x3A), shnum = rd16(elf + 0x3C), shstrndx = rd16(elf + 0x3E);
    *out = 0;
    if (shnum == 0)
        return BC_OK;
    if (shstrndx >= shnum)
        return BC_FAIL(BC_ERR_FATBIN_CORRUPT, "cubin", "section-name index %u past the %u sections", shstrndx, shnum);
    if (shentsize < 64 || !inside_n(len, shoff, (uint64_t)shnum * shentsize))
        return BC_FAIL(BC_ERR_FATBIN_CORRUPT, "cubin", "section headers outside the %zu-byte cubin", len);
    const uint8_t *strsh = elf + shoff + (uint64_t)shstrndx * shentsize;
    const uint64_t stroff = rd64(strsh + 0x18), strsize = rd64(strsh + 0x20);
    if (!inside_n(len, stroff, strsize))
        return BC_FAIL(BC_ERR_FATBIN_CORRUPT, "cubin", "section names outside the %zu-byte cubin", len);
    static const char want[] = ".note.nv.tkinfo";
    for (uint16_t i = 0; i < shnum; i++) {
        const uint8_t *sh = elf + shoff + (uint64_t)i * shentsize;
        const uint32_t name = rd32(sh);
        if (rd32(sh + 4) != SHT_NOTE || name >= strsize || strsize - name < sizeof want ||
            memcmp(elf + stroff + name, want, sizeof want) != 0)
            continue;
        const uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20);
        if (!inside_n(len, off, size) || size < 12)
            return BC_FAIL(BC_ERR_FATBIN_CORRUPT, "cubin", "note %s outside the cubin", want);
        const uint8_t *n = elf + off;
        const uint32_t namesz = rd32(n), descsz = rd32(n + 4);
        const uint64_t desc = 12u + (((uint64_t)namesz + 3u) & ~3ull);
        if (desc > size || size - desc < descsz)
            return BC_FAIL(BC_ERR_FATBIN_CORRUPT, "cubin", "note %s is malformed", want);
        *out = release_in(n + desc, descsz);
        return BC_OK;
    }
    return BC_OK;
}

/* 10 * major + minor (129, 130) as a driver version (12090, 13000). */
static int toolkit_version(uint32_t v) { return (int)(v / 10u) * 1000 + (int)(v % 10u) * 10; }

bc_status bc__cubin_requirement(const bc__fatbin_entry *e, const uint8_t *elf, size_t len, bc__cubin_req *out)
{
    if (e == NULL || elf == NULL || out == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__cubin_requirement", "NULL argument");
    if (len < 64 || memcmp(elf, "\177ELF", 4) != 0 || elf[4] != 2)
        return BC_FAIL(BC_ERR_FATBIN_CORRUPT, "cubin", "the sm_%u%s entry is not a 64-bit ELF",
                       e->arch, e->suffix == 'a' ? "a" : e->suffix == 'f' ? "f" : "");
    bc__cubin_req r = {0, elf[8], 0};
    uint32_t tk = 0;
    bc_status st = tkinfo_release(elf, len, &tk);
    if (st)
        return st;
    const uint32_t v = rd32(elf + 20); /* ABI 7: e_version is the toolkit, 10 * major + minor */
    if (tk == 0 && r.abi < 8 && v >= 10 && v < 1000)
        tk = v;
    r.toolkit = tk ? toolkit_version(tk) : r.abi >= 8 ? 13000 : 0;
    const int major = r.toolkit / 1000 * 1000, arch = bc__arch_min_driver(e->arch, e->suffix);
    r.min_driver = major > arch ? major : arch;
    if (r.min_driver < FLOOR)
        r.min_driver = FLOOR;
    *out = r;
    return BC_OK;
}

static int ver_major(int v) { return v / 1000; }
static int ver_minor(int v) { return v % 1000 / 10; }

bc_status bc__cubin_check_driver(const bc__fatbin_entry *e, const uint8_t *buf, const char *arch,
                                 int driver_version)
{
    bc__cubin_req r;
    bc_status st = bc__cubin_requirement(e, buf + e->payload_offset, e->payload_size, &r);
    return st ? st : bc__cubin_req_check(&r, arch, driver_version);
}

bc_status bc__cubin_req_check(const bc__cubin_req *rp, const char *arch, int driver_version)
{
    const bc__cubin_req r = *rp;
    if (driver_version >= r.min_driver)
        return BC_OK;
    return BC_FAIL(BC_ERR_DRIVER_TOO_OLD, "image driver",
                   "the %s image needs a CUDA %d.%d driver or newer (written by CUDA %d.%d ptxas, ELF ABI %d); "
                   "this driver is CUDA %d.%d",
                   arch, ver_major(r.min_driver), ver_minor(r.min_driver), ver_major(r.toolkit),
                   ver_minor(r.toolkit), r.abi, ver_major(driver_version), ver_minor(driver_version));
}
