/* Internal: a plain cubin (a CUDA ELF file given as is, not inside a fatbin
 * container), described as if it were a one-entry container.
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
 */
#ifndef BC_LOADER_CUBIN_H
#define BC_LOADER_CUBIN_H

#include <stddef.h>
#include <stdint.h>

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

#endif
