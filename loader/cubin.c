/* The driver a cubin requires, from its ELF header and notes (cubin.h). */
#include <string.h>

#include "cubin.h"
#include "error.h"

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
static int inside(size_t len, uint64_t off, uint64_t n) { return off <= len && n <= len - off; }

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
    if (shentsize < 64 || shstrndx >= shnum || !inside(len, shoff, (uint64_t)shnum * shentsize))
        return BC_FAIL(BC_ERR_FATBIN_CORRUPT, "cubin", "section headers outside the %zu-byte cubin", len);
    const uint8_t *strsh = elf + shoff + (uint64_t)shstrndx * shentsize;
    const uint64_t stroff = rd64(strsh + 0x18), strsize = rd64(strsh + 0x20);
    if (!inside(len, stroff, strsize))
        return BC_FAIL(BC_ERR_FATBIN_CORRUPT, "cubin", "section names outside the %zu-byte cubin", len);
    static const char want[] = ".note.nv.tkinfo";
    for (uint16_t i = 0; i < shnum; i++) {
        const uint8_t *sh = elf + shoff + (uint64_t)i * shentsize;
        const uint32_t name = rd32(sh);
        if (rd32(sh + 4) != SHT_NOTE || name >= strsize || strsize - name < sizeof want ||
            memcmp(elf + stroff + name, want, sizeof want) != 0)
            continue;
        const uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20);
        if (!inside(len, off, size) || size < 12)
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
    if (st)
        return st;
    if (driver_version >= r.min_driver)
        return BC_OK;
    return BC_FAIL(BC_ERR_DRIVER_TOO_OLD, "image driver",
                   "the %s image needs a CUDA %d.%d driver or newer (written by CUDA %d.%d ptxas, ELF ABI %d); "
                   "this driver is CUDA %d.%d",
                   arch, ver_major(r.min_driver), ver_minor(r.min_driver), ver_major(r.toolkit),
                   ver_minor(r.toolkit), r.abi, ver_major(driver_version), ver_minor(driver_version));
}
