/* barecuda info: the driver's CUDA version and every device's properties.
 *
 * Each device is opened the cheapest way barecuda can (primary context, no
 * arenas, no kernels), queried and closed. Without a usable driver it prints
 * one line on stderr and exits with cli.h's code for the failure class
 * (10 no driver or only the toolkit stub, 11 driver too old, 12 no device).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: barecuda info [--json]\n"
            "Prints the NVIDIA driver's CUDA version and, for each device: name, compute\n"
            "capability, SM count, memory, shared memory per block (opt-in), L2 size and\n"
            "stream priority range. --json prints one JSON object instead.\n"
            "Exit codes: 0 ok, %d no NVIDIA driver (or only the toolkit's stub), %d driver\n"
            "older than CUDA 12.0, %d no CUDA device, %d anything else (README, \"Exit codes\").\n",
            BC_EXIT_NO_DRIVER, BC_EXIT_DRIVER_OLD, BC_EXIT_NO_DEVICE, BC_EXIT_ERROR);
}

/* The calling thread's last failure message on one line ("" if none for st). */
static void failure_text(bc_status st, char *out, size_t cap)
{
    bc_error_detail d;
    bc_last_error(&d);
    snprintf(out, cap, "%s", d.status == st ? d.message : "");
    for (char *p = out; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

/* "BC_ERR_NO_DRIVER" from "BC_ERR_NO_DRIVER: ...". */
static void status_code(bc_status st, char *out, size_t cap)
{
    snprintf(out, cap, "%s", bc_status_string(st));
    out[strcspn(out, ":")] = '\0';
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

/* The one stderr line for a failure before any device could be listed. */
static void report_global(bc_status st)
{
    char msg[600];
    failure_text(st, msg, sizeof msg);
    const char *what;
    switch (st) {
    case BC_ERR_NO_DRIVER:
    case BC_ERR_DRIVER_STUB:
        what = "no NVIDIA driver";
        break;
    case BC_ERR_DRIVER_TOO_OLD:
    case BC_ERR_MISSING_ENTRY_POINT:
        what = "NVIDIA driver too old (barecuda needs CUDA 12.0 or newer)";
        break;
    case BC_ERR_NO_DEVICE:
        what = "no CUDA device";
        break;
    default:
        what = bc_status_string(st);
        break;
    }
    fprintf(stderr, "barecuda info: %s%s%s\n", what, msg[0] ? ": " : "", msg);
}

static void print_size(const char *label, double bytes, unsigned long long exact)
{
    const char *unit = "B";
    double v = bytes;
    if (bytes >= (double)(1ull << 30)) {
        v = bytes / (double)(1ull << 30);
        unit = "GiB";
    } else if (bytes >= (double)(1u << 20)) {
        v = bytes / (double)(1u << 20);
        unit = "MiB";
    } else if (bytes >= 1024.0) {
        v = bytes / 1024.0;
        unit = "KiB";
    }
    printf("  %-20s %.1f %s (%llu bytes)\n", label, v, unit, exact);
}

static void print_device_text(const bc_device_info *in)
{
    printf("device %d: %s\n", in->ordinal, in->name);
    printf("  %-20s %d.%d\n", "compute capability", in->cc_major, in->cc_minor);
    printf("  %-20s %d\n", "SMs", in->sm_count);
    print_size("memory", (double)in->total_mem_bytes, (unsigned long long)in->total_mem_bytes);
    print_size("smem/block opt-in", (double)in->smem_per_block_optin,
               (unsigned long long)in->smem_per_block_optin);
    print_size("L2 cache", (double)in->l2_bytes, (unsigned long long)in->l2_bytes);
    printf("  %-20s %d (greatest) .. %d (least)\n", "stream priorities",
           in->stream_priority_greatest, in->stream_priority_least);
}

static void print_device_json(const bc_device_info *in)
{
    printf("{\"ordinal\":%d,\"name\":", in->ordinal);
    json_str(in->name);
    printf(",\"cc\":\"%d.%d\",\"cc_major\":%d,\"cc_minor\":%d,\"sm_count\":%d,"
           "\"total_mem_bytes\":%llu,\"smem_per_block_optin\":%d,\"l2_bytes\":%d,"
           "\"stream_priority_greatest\":%d,\"stream_priority_least\":%d}",
           in->cc_major, in->cc_minor, in->cc_major, in->cc_minor, in->sm_count,
           (unsigned long long)in->total_mem_bytes, in->smem_per_block_optin, in->l2_bytes,
           in->stream_priority_greatest, in->stream_priority_least);
}

/* Opens device `ordinal` for queries only and fills *out. */
static bc_status query_device(int ordinal, bc_device_info *out)
{
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    cfg.ordinal = ordinal;
    cfg.use_primary_context = 1;
    cfg.device_arena_bytes = 0;
    cfg.host_arena_bytes = 0;
    cfg.skip_kernel_load = 1;
    bc_device *dev = NULL;
    bc_status st = bc_device_open(&cfg, &dev);
    if (st == BC_OK) {
        st = bc_device_query(dev, out);
        bc_device_close(dev);
    }
    return st;
}

int bc_cmd_info(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return BC_EXIT_OK;
        } else {
            fprintf(stderr, "barecuda info: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return BC_EXIT_USAGE;
        }
    }

    int version = 0, count = 0;
    bc_status st = bc_driver_version(&version);
    if (st == BC_OK)
        st = bc_device_count(&count);
    if (st != BC_OK) {
        int rc = bc_cli_exit_code(st);
        if (json) {
            char code[64], msg[600];
            status_code(st, code, sizeof code);
            failure_text(st, msg, sizeof msg);
            printf("{\"barecuda\":\"%s\",\"error\":{\"status\":\"%s\",\"exit_code\":%d,\"message\":",
                   BARECUDA_VERSION, code, rc);
            json_str(msg);
            printf("}}\n");
        }
        report_global(st);
        return rc;
    }

    if (json)
        printf("{\"barecuda\":\"%s\",\"driver_version\":%d,\"driver\":\"%d.%d\",\"devices\":[",
               BARECUDA_VERSION, version, version / 1000, (version % 1000) / 10);
    else
        printf("barecuda %s\ndriver: CUDA %d.%d (%d)\ndevices: %d\n", BARECUDA_VERSION,
               version / 1000, (version % 1000) / 10, version, count);

    bc_status first = BC_OK;
    for (int i = 0; i < count; i++) {
        bc_device_info in;
        memset(&in, 0, sizeof in);
        bc_status ds = query_device(i, &in);
        if (ds == BC_OK) {
            if (json) {
                printf("%s", i ? "," : "");
                print_device_json(&in);
            } else {
                print_device_text(&in);
            }
            continue;
        }
        char code[64], msg[600];
        status_code(ds, code, sizeof code);
        failure_text(ds, msg, sizeof msg);
        if (json) {
            printf("%s{\"ordinal\":%d,\"error\":{\"status\":\"%s\",\"message\":", i ? "," : "", i,
                   code);
            json_str(msg);
            printf("}}");
        }
        fprintf(stderr, "barecuda info: device %d: %s%s%s\n", i, bc_status_string(ds),
                msg[0] ? ": " : "", msg);
        if (first == BC_OK)
            first = ds;
    }
    if (json)
        printf("]}\n");
    return first == BC_OK ? BC_EXIT_OK : bc_cli_exit_code(first);
}
