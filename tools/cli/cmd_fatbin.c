/* barecuda fatbin: list the entries of a fatbin (a file, or the embedded one). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cubin.h"
#include "digest.h"
#include "file.h"
#include "fatbin.h"

extern const uint8_t bc__fatbin_bytes[];
extern const uint8_t bc__fatbin_bytes_end[];
extern const size_t bc__fatbin_size;
extern const uint64_t bc__fatbin_digest;
extern const uint8_t bc__groups_bytes[];
extern const uint8_t bc__groups_bytes_end[];
extern const size_t bc__groups_size;
extern const uint64_t bc__groups_digest;
extern const uint8_t bc__sk_bytes[];
extern const uint8_t bc__sk_bytes_end[];
extern const size_t bc__sk_size;
extern const uint64_t bc__sk_digest;

#define MAX_FILE_BYTES ((size_t)1 << 30)

static void usage(FILE *f)
{
    fprintf(f, "usage: barecuda fatbin FILE [--json]\n"
               "       barecuda fatbin --embedded [--json]\n"
               "Lists every entry of a fatbin container (kind, arch, sizes, compression, flags), or\n"
               "describes a plain cubin. --embedded checks the library's own kernels against their build\n"
               "digests and lists them: the fatbin, then the sm_90a cubins of the optional kernel groups\n"
               "(the resident and portable kernels, then the stream-K twins; with --json, one object per\n"
               "line). Needs no GPU. Damaged or unknown input is an error\n"
               "(exit %d); a file that cannot be read exits %d.\n",
               BC_EXIT_IMAGE, BC_EXIT_ERROR);
}

/* Writes s as a JSON string literal. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void print_text(const char *name, size_t len, uint64_t xxh, const bc__fatbin_entry *e, size_t n, int cubin)
{
    if (cubin)
        printf("%s: %zu bytes, a plain cubin (no container; ELF ABI %u, e_flags 0x%08llx), XXH64 0x%016llx\n",
               name, len, e[0].code_major, (unsigned long long)e[0].flags, (unsigned long long)xxh);
    else
        printf("%s: %zu bytes, %u container%s, %zu entr%s, XXH64 0x%016llx\n", name, len,
               e[n - 1].container + 1, e[n - 1].container ? "s" : "", n, n == 1 ? "y" : "ies",
               (unsigned long long)xxh);
    printf("%4s %4s  %-4s  %-12s %8s %4s %9s  %-22s %s\n", "idx", "cont", "kind", "arch", "offset", "hdr",
           "payload", "compressed", "flags");
    for (size_t i = 0; i < n; i++) {
        char arch[24], comp[40];
        bc__fatbin_arch_name(&e[i], arch, sizeof arch);
        if (e[i].compression == BC__FATBIN_UNCOMPRESSED)
            snprintf(comp, sizeof comp, "no");
        else
            snprintf(comp, sizeof comp, "%s %u->%llu", bc__fatbin_compression_name(e[i].compression),
                     e[i].compressed_size, (unsigned long long)e[i].decompressed_size);
        printf("%4zu %4u  %-4s  %-12s %8zu %4u %9zu  %-22s 0x%016llx\n", i, e[i].container,
               bc__fatbin_kind_name(e[i].kind), arch, e[i].header_offset, e[i].header_size, e[i].payload_size,
               comp, (unsigned long long)e[i].flags);
    }
}

static void print_json(const char *name, size_t len, uint64_t xxh, const bc__fatbin_entry *e, size_t n, int cubin)
{
    printf("{\"file\":");
    json_str(stdout, name);
    printf(",\"bytes\":%zu,\"xxh64\":\"0x%016llx\",\"plain_cubin\":%s,\"containers\":%u,\"entries\":[", len,
           (unsigned long long)xxh, cubin ? "true" : "false", cubin ? 0u : e[n - 1].container + 1);
    for (size_t i = 0; i < n; i++) {
        char arch[24];
        bc__fatbin_arch_name(&e[i], arch, sizeof arch);
        printf("%s{\"index\":%zu,\"container\":%u,\"kind\":\"%s\",\"arch\":\"%s\",\"offset\":%zu,"
               "\"header_size\":%u,\"payload_offset\":%zu,\"payload_size\":%zu,\"compressed\":%s,"
               "\"compression\":\"%s\",\"compressed_size\":%u,\"decompressed_size\":%llu,"
               "\"flags\":\"0x%016llx\",\"code_version\":\"%u.%u\"}",
               i ? "," : "", i, e[i].container, bc__fatbin_kind_name(e[i].kind), arch, e[i].header_offset,
               e[i].header_size, e[i].payload_offset, e[i].payload_size,
               e[i].compression == BC__FATBIN_UNCOMPRESSED ? "false" : "true",
               bc__fatbin_compression_name(e[i].compression), e[i].compressed_size,
               (unsigned long long)e[i].decompressed_size, (unsigned long long)e[i].flags, e[i].code_major,
               e[i].code_minor);
    }
    printf("]}\n");
}

static void print_json_error(const char *name, bc_status st)
{
    bc_error_detail d;
    bc_last_error(&d);
    char code[64];
    snprintf(code, sizeof code, "%s", bc_status_string(st));
    code[strcspn(code, ":")] = '\0';
    printf("{\"file\":");
    json_str(stdout, name);
    printf(",\"error\":{\"status\":\"%s\",\"message\":", code);
    json_str(stdout, d.status == st ? d.message : "");
    printf("}}\n");
}

/* Parses and prints; returns the exit code. */
static int inspect(const char *name, const uint8_t *buf, size_t len, int json)
{
    size_t n = 0;
    const int cubin = bc__is_elf(buf, len);
    bc__fatbin_entry *e = NULL;
    bc_status st = cubin ? BC_OK : bc__fatbin_parse(buf, len, NULL, 0, &n);
    if (st == BC_OK) {
        e = calloc(cubin ? 1 : n, sizeof *e);
        st = e == NULL ? BC_ERR_OUT_OF_HOST_MEMORY
             : cubin   ? bc__cubin_describe(buf, len, e)
                       : bc__fatbin_parse(buf, len, e, n, &n);
        n = cubin ? 1 : n;
    }
    if (st != BC_OK) {
        if (json)
            print_json_error(name, st);
        bc_cli_report("fatbin", st);
        free(e);
        return st == BC_ERR_OUT_OF_HOST_MEMORY ? BC_EXIT_ERROR : BC_EXIT_IMAGE;
    }
    uint64_t xxh = bc__xxh64(buf, len, 0);
    if (json)
        print_json(name, len, xxh, e, n, cubin);
    else
        print_text(name, len, xxh, e, n, cubin);
    free(e);
    return BC_EXIT_OK;
}

/* Whether an embedded blob has the size and XXH64 digest the build
 * recorded for it; says which on stderr when not. */
static int embedded_matches(const char *what, const uint8_t *bytes, const uint8_t *end, size_t size, uint64_t digest)
{
    if ((size_t)(end - bytes) == size && bc__xxh64(bytes, size, 0) == digest)
        return 1;
    fprintf(stderr, "barecuda fatbin: the embedded %s does not match its build size %zu and digest 0x%016llx\n", what,
            size, (unsigned long long)digest);
    return 0;
}

int bc_cmd_fatbin(int argc, char **argv)
{
    const char *path = NULL;
    int json = 0, embedded = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--embedded")) {
            embedded = 1;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return BC_EXIT_OK;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "barecuda fatbin: unknown option %s\n", argv[i]);
            usage(stderr);
            return BC_EXIT_USAGE;
        } else if (path == NULL) {
            path = argv[i];
        } else {
            fprintf(stderr, "barecuda fatbin: one FILE only\n");
            return BC_EXIT_USAGE;
        }
    }
    if ((path == NULL) == (embedded == 0)) {
        usage(stderr);
        return BC_EXIT_USAGE;
    }
    if (embedded) {
        if (!embedded_matches("fatbin", bc__fatbin_bytes, bc__fatbin_bytes_end, bc__fatbin_size, bc__fatbin_digest) ||
            !embedded_matches("optional-groups cubin", bc__groups_bytes, bc__groups_bytes_end, bc__groups_size,
                              bc__groups_digest) ||
            !embedded_matches("stream-K cubin", bc__sk_bytes, bc__sk_bytes_end, bc__sk_size, bc__sk_digest))
            return BC_EXIT_IMAGE;
        int rc = inspect("(embedded)", bc__fatbin_bytes, bc__fatbin_size, json);
        if (rc == BC_EXIT_OK)
            rc = inspect("(embedded optional groups, sm_90a)", bc__groups_bytes, bc__groups_size, json);
        if (rc == BC_EXIT_OK)
            rc = inspect("(embedded stream-K twins, sm_90a)", bc__sk_bytes, bc__sk_size, json);
        return rc;
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    bc_status st = bc__read_file(path, MAX_FILE_BYTES, &buf, &len);
    if (st) {
        bc_cli_report("fatbin", st);
        return BC_EXIT_ERROR;
    }
    int rc = inspect(path, buf, len, json);
    free(buf);
    return rc;
}
