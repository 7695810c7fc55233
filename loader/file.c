/* Reading a module file (file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "file.h"

static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISCHR(m) || S_ISBLK(m))
        return "a device";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

/* Reads exactly n bytes; 0 on success, else the errno (EIO for a short file). */
static int read_all(int fd, uint8_t *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno;
        if (r == 0)
            return EIO; /* the file shrank while being read */
        got += (size_t)r;
    }
    return 0;
}

bc_status bc__read_file(const char *path, size_t max_bytes, uint8_t **out_buf, size_t *out_len)
{
    if (path == NULL || out_buf == NULL || out_len == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc__read_file", "NULL path or output");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return BC_FAIL(BC_ERR_FILE_IO, "open", "cannot open %s: %s", path, strerror(errno));
    bc_status st = BC_OK;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        st = BC_FAIL(BC_ERR_FILE_IO, "fstat", "cannot stat %s: %s", path, strerror(errno));
        goto close_fd;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = BC_FAIL(BC_ERR_NOT_REGULAR_FILE, "path", "%s is %s, not a regular file", path,
                     file_kind(sb.st_mode));
        goto close_fd;
    }
    if (sb.st_size < 0 || (uint64_t)sb.st_size > max_bytes) {
        st = BC_FAIL(BC_ERR_FILE_TOO_LARGE, "max_file_bytes", "%s is %lld bytes, over the %zu-byte limit", path,
                     (long long)sb.st_size, max_bytes);
        goto close_fd;
    }
    size_t n = (size_t)sb.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (buf == NULL) {
        st = BC_FAIL(BC_ERR_OUT_OF_HOST_MEMORY, "malloc", "cannot allocate %zu bytes for %s", n, path);
        goto close_fd;
    }
    int err = read_all(fd, buf, n);
    if (err) {
        st = BC_FAIL(BC_ERR_FILE_IO, "read", "cannot read the %zu bytes of %s: %s", n, path, strerror(err));
        free(buf);
        goto close_fd;
    }
    *out_buf = buf;
    *out_len = n;
close_fd:
    close(fd);
    return st;
}
