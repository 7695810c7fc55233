/* Internal: what barecuda reads from a cubin's ELF header and notes, with
 * no driver: a plain cubin described as a one-entry container, and the
 * oldest driver that loads a cubin.
 *
 * A plain cubin is a CUDA ELF file given as is, not inside a fatbin
 * container; it is described as if it were a one-entry container.
 *
 * The SM number comes from the ELF header's e_flags, whose layout depends on
 * the CUDA ELF ABI version (e_ident[EI_ABIVERSION]), checked on cubins that
 * CUDA 13.0's ptxas and nvcc wrote (sm_80 ... sm_121) and on LLVM's
 * BinaryFormat/ELF.h for the older one:
 *
 *   ABI 7 and older (CUDA 12.x): SM = e_flags & 0xff,        'a' = e_flags & 0x800
 *   ABI 8 (CUDA 13):             SM = (e_flags >> 8) & 0xff, 'a' = e_flags & 0x8
 *
 * e.g. 0x06005a04 is sm_90 under ABI 8. CUDA 13.0 writes the same e_flags
 * for sm_90 and sm_90a and for sm_100, sm_100a and sm_100f, so an
 * arch-specific cubin usually reads as plain: it then passes the check on a
 * device of the same major and higher minor, and the driver refuses it
 * (BC_ERR_MODULE_LOAD with the driver's log). 'f' is never recoverable.
 *
 * ptxas writes its toolkit's version into every cubin (observed on ptxas
 * 12.9 and 13.0): the .note.nv.tkinfo note carries its banner ("Cuda
 * compilation tools, release 13.0, ..."); without the note, an ELF ABI 7
 * cubin's e_version holds it as 10 * major + minor (0x81 = 129: CUDA 12.9).
 * The ELF layout itself changed: ABI 8 (EI_OSABI 0x41, a new e_flags
 * layout) is what ptxas 12.8/12.9 writes for Blackwell targets and what
 * ptxas 13 writes for every target; ptxas 12.x writes ABI 7 (EI_OSABI 0x33)
 * for the others. An ABI 8 cubin with no readable version counts as 13.0.
 *
 * NVIDIA's compatibility rule (CUDA minor-version compatibility): a cubin
 * from toolkit X.y loads on any driver of the same major release X, from
 * X.0 on; a newer major needs a newer driver (CUDA 13.x: driver >= 580,
 * i.e. CUDA 13.0). A driver must also know the architecture: sm_100, sm_101
 * and sm_120 came with CUDA 12.8; sm_103, sm_121 and the 'f' family targets
 * with 12.9; sm_110 with 13.0. The minimum is the larger of the two, and
 * never below barecuda's own floor (CUDA 12.0).
 */
#ifndef BC_LOADER_CUBIN_H
#define BC_LOADER_CUBIN_H

#include <stddef.h>
#include <stdint.h>

#include "barecuda/status.h"
#include "fatbin.h"

#define BC__ELF_MACHINE_CUDA 190u

/* 1 if buf starts with the ELF magic (a plain cubin candidate). */
int bc__is_elf(const uint8_t *buf, size_t len);

/* Checks that buf[0, len) is a whole 64-bit little-endian CUDA ELF (the
 * header, the section and program header tables and every section with
 * file contents lie inside it) and describes it as one ELF entry: kind ELF,
 * arch and suffix from e_flags, payload = the whole buffer. On failure
 * BC_ERR_FATBIN_CORRUPT naming what is wrong; *out is written only on
 * success. */
bc_status bc__cubin_describe(const uint8_t *buf, size_t len, bc__fatbin_entry *out);



typedef struct bc__cubin_req {
    int toolkit;    /* toolkit that wrote it, as cuDriverGetVersion counts: 12090, 13000 */
    int abi;        /* EI_ABIVERSION: 7 or 8 */
    int min_driver; /* oldest driver that loads it (cuDriverGetVersion value) */
} bc__cubin_req;

/* Reads what the cubin elf[0, len) of fatbin entry `e` (for its arch and
 * suffix) requires of the driver. BC_ERR_FATBIN_CORRUPT when the bytes are
 * not a 64-bit ELF or a header or note lies outside them;
 * BC_ERR_INVALID_ARGUMENT for NULL pointers. An ABI-8 cubin without the
 * note counts as CUDA 13.0. *out is written only on BC_OK. */
bc_status bc__cubin_requirement(const bc__fatbin_entry *e, const uint8_t *elf, size_t len, bc__cubin_req *out);

/* BC_OK when a driver reporting `driver_version` loads a cubin requiring
 * r; else BC_ERR_DRIVER_TOO_OLD naming the image (`arch`), the version it
 * needs, the toolkit that wrote it and the driver's version. */
bc_status bc__cubin_req_check(const bc__cubin_req *r, const char *arch, int driver_version);

/* bc__cubin_req_check of the cubin of entry `e` (in buf), read first: a
 * malformed cubin fails as bc__cubin_requirement does. */
bc_status bc__cubin_check_driver(const bc__fatbin_entry *e, const uint8_t *buf, const char *arch,
                                 int driver_version);

/* The first driver that knows architecture sm_<arch><suffix> (12000 for
 * everything barecuda's floor already covers). */
int bc__arch_min_driver(unsigned arch, char suffix);

#endif
