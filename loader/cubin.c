/* The driver a cubin requires, from its ELF header and notes (cubin.h). */
#include <string.h>

#include "cubin.h"
#include "error.h"

#define FLOOR 12000 /* barecuda's own minimum: the driver table is resolved at CUDA 12.0 */
#define SHT_NOTE 7u
#define NOTE_CUINFO 1000u

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

/* The toolkit field of the .note.nv.cuinfo note (0 when absent). */
static bc_status cuinfo_toolkit(const uint8_t *elf, size_t len, uint32_t *out)
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
    static const char want[] = ".note.nv.cuinfo";
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
        const uint32_t namesz = rd32(n), descsz = rd32(n + 4), type = rd32(n + 8);
        const uint64_t desc = 12u + (((uint64_t)namesz + 3u) & ~3ull);
        if (type != NOTE_CUINFO || descsz < 8 || desc > size || size - desc < descsz)
            return BC_FAIL(BC_ERR_FATBIN_CORRUPT, "cubin", "note %s is malformed", want);
        *out = rd32(n + desc + 4);
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
    if (r.abi >= 8) {
        uint32_t tk = 0;
        bc_status st = cuinfo_toolkit(elf, len, &tk);
        if (st)
            return st;
        r.toolkit = tk >= 130 ? toolkit_version(tk) : 13000;
    } else {
        const uint32_t v = rd32(elf + 20); /* e_version: the toolkit, 10 * major + minor */
        r.toolkit = v >= 10 && v < 1000 ? toolkit_version(v) : 0;
    }
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
