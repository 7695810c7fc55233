/* Helpers shared by the bench and latency commands (see cli_util.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_util.h"

int bc_cli_parse_dtype(const char *s, bc_dtype *out)
{
    if (!strcmp(s, "bf16"))
        *out = BC_DTYPE_BF16;
    else if (!strcmp(s, "f16") || !strcmp(s, "fp16"))
        *out = BC_DTYPE_F16;
    else if (!strcmp(s, "f32") || !strcmp(s, "fp32"))
        *out = BC_DTYPE_F32;
    else
        return -1;
    return 0;
}

const char *bc_cli_dtype_name(bc_dtype t)
{
    return t == BC_DTYPE_BF16 ? "bf16" : t == BC_DTYPE_F16 ? "f16" : "f32";
}

int bc_cli_parse_ll(const char *s, long long lo, long long hi, long long *out)
{
    if (s == NULL || *s == '\0')
        return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int bc_cli_parse_double(const char *s, double lo, double hi, double *out)
{
    if (s == NULL || *s == '\0')
        return -1;
    char *end = NULL;
    errno = 0;
    const double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int bc_cli_parse_set(const char *s, const char *const *names, int count, int *out)
{
    if (!strcmp(s, "all")) {
        *out = (1 << count) - 1;
        return 0;
    }
    int set = 0;
    for (const char *p = s;; p++) {
        const size_t len = strcspn(p, ",");
        int i = 0;
        while (i < count && (strlen(names[i]) != len || strncmp(p, names[i], len) != 0))
            i++;
        if (len == 0 || i == count)
            return -1; /* an empty or unknown name */
        set |= 1 << i;
        p += len;
        if (*p == '\0')
            break;
    }
    *out = set;
    return 0;
}

int bc_cli_check_writable(const char *cmd, const char *opt, const char *path)
{
    FILE *f = fopen(path, "a");
    if (f == NULL)
        return fprintf(stderr, "barecuda %s: cannot write --%s %s: %s\n", cmd, opt, path, strerror(errno)), -1;
    fclose(f);
    return 0;
}

void bc_cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void bc_cli_report_call(const char *cmd, const char *call, bc_status st)
{
    bc_error_detail d;
    bc_last_error(&d);
    const int detail = d.status == st && d.message[0];
    fprintf(stderr, "barecuda %s: %.*s failed: %s", cmd, (int)strcspn(call, "("), call,
            bc_status_string(st)); /* the function's name: a caller may pass the whole expression */
    if (detail)
        fprintf(stderr, ": %s", d.message);
    if (detail && d.cu_result != 0)
        fprintf(stderr, " [driver call %s -> %s]", d.call && d.call[0] ? d.call : "?",
                d.cu_name && d.cu_name[0] ? d.cu_name : "?");
    fputc('\n', stderr);
}

uint64_t bc_cli_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
