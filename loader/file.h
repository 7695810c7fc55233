/* Internal: reading a whole module file, with the file rules of
 * bc_module_load_file (module.h). Pure: no driver. */
#ifndef BC_LOADER_FILE_H
#define BC_LOADER_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "barecuda/status.h"

/* Reads the regular file at `path` (symbolic links followed) into a malloc'ed
 * buffer the caller frees. BC_ERR_FILE_IO when it cannot be opened or read
 * completely (errno's text in the message), BC_ERR_NOT_REGULAR_FILE for a
 * directory, device, FIFO or socket (opened without blocking, so a FIFO
 * with no writer does not hang), BC_ERR_FILE_TOO_LARGE above max_bytes,
 * BC_ERR_OUT_OF_HOST_MEMORY, BC_ERR_INVALID_ARGUMENT for NULL arguments.
 * *out_buf and *out_len are written only on success (an empty file gives a
 * 1-byte allocation and length 0). */
bc_status bc__read_file(const char *path, size_t max_bytes, uint8_t **out_buf, size_t *out_len);

#endif
