/* barecuda boot: the boot-time smoke test.
 *
 * Opens the device (driver, context, arenas, digest, image selection, module
 * load), then runs each boot check in `checks[]` on a fresh stream, printing
 * one line per phase with its time, a total, and a verdict. A new check (the
 * known-answer GEMM) is one function appending its phases plus one row in
 * checks[]. Exit codes are cli.h's: a boot script can tell a missing driver
 * from a corrupt image from a wrong answer.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_util.h"

#define MAX_PHASES 24
#define BUDGET_AFTER_CONTEXT_US 5000.0 /* the boot budget on an H100 */
#define CLOSE_TIMEOUT_NS 1000000000ull /* after a hang, close gives up (bc_device_close_timeout) */

typedef struct phase {
    const char *key;   /* JSON key */
    const char *label; /* text label */
    double us;
} phase;

typedef struct boot_run {
    phase phases[MAX_PHASES];
    int nphases;
    double after_context_us; /* arenas onward: everything after context creation */
    const char *failed;      /* key of the phase that failed, NULL when none */
} boot_run;

static void add_phase(boot_run *r, const char *key, const char *label, double us, int after_context)
{
    if (r->nphases < MAX_PHASES)
        r->phases[r->nphases++] = (phase){key, label, us};
    if (after_context)
        r->after_context_us += us;
}

static double mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* CLOCK_MONOTONIC when the program's constructors ran: "since main". */
static double t_main_us;
__attribute__((constructor)) static void record_start(void) { t_main_us = mono_us(); }

/* Microseconds since the kernel started this process (exec), from
 * /proc/self/stat's starttime (clock ticks since boot) against
 * CLOCK_BOOTTIME; the tick (usually 10 ms) bounds its resolution. -1 when
 * unavailable. */
static double since_exec_us(double *out_tick_us)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (f == NULL)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
    if (p == NULL)
        return -1;
    p++;
    unsigned long long start = 0;
    for (int field = 3; field <= 22; field++) { /* field 22: starttime */
        char *end;
        while (*p == ' ')
            p++;
        if (field == 22) {
            start = strtoull(p, &end, 10);
            if (end == p)
                return -1;
            break;
        }
        p = strchr(p, ' ');
        if (p == NULL)
            return -1;
    }
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec ts;
    if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
        return -1;
    *out_tick_us = 1e6 / (double)hz;
    double now = (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
    return now - (double)start * 1e6 / (double)hz;
}

/* ---- boot checks: each runs on `s` and appends its phases */

static bc_status check_smoke(bc_device *dev, bc_stream *s, boot_run *r)
{
    bc_smoke_report rep;
    bc_status st = bc_selftest_smoke(dev, s, &rep);
    if (st) {
        r->failed = st == BC_ERR_VERIFY_FAILED ? "verify" : "first_launch";
        return st;
    }
    add_phase(r, "first_launch", "first launch", rep.first_launch_us, 1);
    add_phase(r, "verify", "verify", rep.verify_us, 1);
    return BC_OK;
}

static bc_status check_gemm(bc_device *dev, bc_stream *s, boot_run *r)
{
    bc_gemm_check_report rep;
    bc_status st = bc_selftest_gemm(dev, s, &rep);
    if (st) {
        r->failed = st == BC_ERR_VERIFY_FAILED ? "gemm_verify" : "gemm_launch";
        return st;
    }
    add_phase(r, "gemm_plan", "gemm plan", rep.plan_us, 1);
    add_phase(r, "gemm_launch", "gemm first launch", rep.launch_us, 1);
    add_phase(r, "gemm_verify", "gemm verify", rep.verify_us, 1);
    return BC_OK;
}

static const struct {
    const char *name;
    bc_status (*run)(bc_device *dev, bc_stream *s, boot_run *r);
} checks[] = {
    {"smoke", check_smoke},
    {"gemm", check_gemm},
};

/* ---- the user's module (--module): loaded after the built-in checks, through
 * bc_module_load_file with the digest and kernels given; its own phase, not
 * counted in the boot budget (the module's size is the user's). */

#define MAX_USER_KERNELS 64

typedef struct user_module {
    const char *path;        /* NULL: none */
    char *names_buf;         /* --kernels, split in place */
    const char *names[MAX_USER_KERNELS];
    int count;
    int check_digest;
    uint64_t digest;
    bc_module_info info;     /* after a successful load; info.arch points at arch */
    char arch[24];
    double us;
} user_module;

/* Splits "a,b,c" into um->names; 0 on success. */
static int parse_kernels(user_module *um, const char *list)
{
    free(um->names_buf);
    um->names_buf = strdup(list);
    um->count = 0;
    if (um->names_buf == NULL)
        return -1;
    for (char *save = NULL, *t = strtok_r(um->names_buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (um->count == MAX_USER_KERNELS)
            return -1;
        um->names[um->count++] = t;
    }
    return um->count > 0 ? 0 : -1;
}

static int parse_digest(user_module *um, const char *hex)
{
    char *end = NULL;
    errno = 0;
    if (!isxdigit((unsigned char)hex[0])) /* strtoull would take blanks or a sign ("0x" may lead) */
        return -1;
    unsigned long long v = strtoull(hex, &end, 16);
    if (errno || end == hex || *end != '\0')
        return -1;
    um->digest = v;
    um->check_digest = 1;
    return 0;
}

static bc_status check_user_module(bc_device *dev, user_module *um, boot_run *r)
{
    bc_module_options o;
    bc_module_options_default(&o);
    o.check_digest = um->check_digest;
    o.expected_digest = um->digest;
    o.kernels = um->names;
    o.kernel_count = um->count;
    bc_module *m = NULL;
    double t0 = mono_us();
    bc_status st = bc_module_load_file(dev, um->path, &o, &m);
    um->us = mono_us() - t0;
    if (st) {
        r->failed = "user_module";
        return st;
    }
    bc_module_query(m, &um->info);
    snprintf(um->arch, sizeof um->arch, "%s", um->info.arch); /* the module goes before the report */
    um->info.arch = um->arch;
    add_phase(r, "user_module", "user module", um->us, 0);
    bc_module_unload(m);
    return BC_OK;
}

/* ---- output */

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

static void print_text(const boot_run *r, const bc_device_info *info, int have_info, const user_module *um,
                       bc_status st, int rc, double exec_us, double tick_us, double main_us)
{
    if (have_info)
        printf("barecuda boot: device %d \"%s\" (sm_%d%d, %d SMs), driver %d.%d, image %s\n", info->ordinal,
               info->name, info->cc_major, info->cc_minor, info->sm_count, info->driver_version / 1000,
               (info->driver_version % 1000) / 10, info->image_arch[0] ? info->image_arch : "-");
    for (int i = 0; i < r->nphases; i++)
        printf("  %-14s %10.1f us\n", r->phases[i].label, r->phases[i].us);
    if (um->path && um->info.arch)
        printf("  user module %s: image %s%s, %d entr%s, %d kernel%s resolved, XXH64 0x%016llx%s\n", um->path,
               um->info.arch, um->info.jit ? " (PTX, JIT-compiled)" : "", um->info.entries,
               um->info.entries == 1 ? "y" : "ies", um->info.kernels_resolved, um->info.kernels_resolved == 1 ? "" : "s",
               (unsigned long long)um->info.digest, um->check_digest ? " (checked)" : "");
    if (st == BC_OK) {
        printf("  %-14s %10.1f us  (arenas .. verify; budget %.0f us: %s)\n", "after context",
               r->after_context_us, BUDGET_AFTER_CONTEXT_US,
               r->after_context_us <= BUDGET_AFTER_CONTEXT_US ? "within" : "OVER");
        if (exec_us >= 0)
            printf("  %-14s %10.1f us  (process start -> verified; /proc tick %.0f us)\n", "total", exec_us,
                   tick_us);
        printf("  %-14s %10.1f us  (main -> verified)\n", "since main", main_us);
        printf("verdict: PASS\n");
        return;
    }
    bc_error_detail d;
    bc_last_error(&d);
    printf("  FAILED at %s: %s%s%s\n", r->failed ? r->failed : "?", bc_status_string(st),
           d.status == st && d.message[0] ? ": " : "", d.status == st ? d.message : "");
    if (bc_cli_recovery(st))
        printf("  recovery: %s\n", bc_cli_recovery(st));
    printf("verdict: FAIL (exit %d)\n", rc);
}

static void print_json(const boot_run *r, const bc_device_info *info, int have_info, const user_module *um,
                       bc_status st, int rc, double exec_us, double tick_us, double main_us)
{
    char code[64];
    status_code(st, code, sizeof code);
    bc_error_detail d;
    bc_last_error(&d);
    printf("{\"verdict\":\"%s\",\"exit_code\":%d,\"status\":\"%s\",\"failed_phase\":", st ? "fail" : "pass", rc,
           code);
    if (r->failed)
        json_str(r->failed);
    else
        printf("null");
    printf(",\"message\":");
    json_str(st && d.status == st ? d.message : "");
    if (bc_cli_recovery(st)) {
        printf(",\"recovery\":");
        json_str(bc_cli_recovery(st));
    }
    if (have_info) {
        printf(",\"device\":{\"ordinal\":%d,\"name\":", info->ordinal);
        json_str(info->name);
        printf(",\"cc\":\"%d.%d\",\"sm_count\":%d,\"driver_version\":%d,\"image\":\"%s\"}", info->cc_major,
               info->cc_minor, info->sm_count, info->driver_version, info->image_arch);
    }
    if (um->path) {
        printf(",\"module\":{\"file\":");
        json_str(um->path);
        if (um->info.arch)
            printf(",\"image\":\"%s\",\"jit\":%s,\"entries\":%d,\"kernels\":%d,\"xxh64\":\"0x%016llx\"",
                   um->info.arch, um->info.jit ? "true" : "false", um->info.entries, um->info.kernels_resolved,
                   (unsigned long long)um->info.digest);
        printf(",\"digest_checked\":%s}", um->check_digest ? "true" : "false");
    }
    printf(",\"phases_us\":{");
    for (int i = 0; i < r->nphases; i++)
        printf("%s\"%s\":%.1f", i ? "," : "", r->phases[i].key, r->phases[i].us);
    printf("}");
    if (st == BC_OK) {
        printf(",\"after_context_us\":%.1f,\"budget_after_context_us\":%.0f,\"since_main_us\":%.1f",
               r->after_context_us, BUDGET_AFTER_CONTEXT_US, main_us);
        if (exec_us >= 0)
            printf(",\"since_exec_us\":%.1f,\"exec_tick_us\":%.0f", exec_us, tick_us);
    }
    printf("}\n");
}

static void usage(FILE *f)
{
    fprintf(f, "usage: barecuda boot [--device N] [--json] [--kernel-groups resident,portable,stream-k|all]\n"
               "                    [--module FILE [--kernels a,b,...] [--digest HEX]]\n"
               "Opens the device, checks and loads the kernel image, runs the known-answer checks,\n"
               "prints each phase's time and a verdict. --kernel-groups also resolves those optional\n"
               "kernel groups at open, as an application that uses them does (README, \"Boot check\").\n"
               "--module also loads the user's fatbin or cubin FILE (XXH64 --digest checked when\n"
               "given) and resolves the --kernels named.\n"
               "Exit codes: see README.md (\"Exit codes\"); a module that cannot be read exits 20;\n"
               "33 (the GPU faulted) and 32 (it hung) mean only a process restart recovers it.\n");
}

/* Maps a failure to the exit code; driver errors during the checks are launch failures. */
static int exit_code(bc_status st, int in_checks)
{
    if (in_checks && st == BC_ERR_DRIVER)
        return BC_EXIT_LAUNCH;
    return bc_cli_exit_code(st);
}

/* --kernel-groups names, bit i for name i (bc_cli_parse_set). */
static const char *const group_names[] = {"resident", "portable", "stream-k"};
_Static_assert(BC_KERNELS_RESIDENT == 1u << 0 && BC_KERNELS_PORTABLE == 1u << 1 && BC_KERNELS_STREAM_K == 1u << 2 &&
                   BC_KERNELS_ALL == 7u,
               "group_names follows the BC_KERNELS_* bits");

/* Opens the device and records the open phases. */
static bc_status open_device(int ordinal, uint32_t groups, boot_run *r, bc_device **out_dev)
{
    bc_device_config cfg;
    bc_device_config_default(&cfg);
    cfg.ordinal = ordinal;
    cfg.kernel_groups = groups;
    /* the boot checks need well under 1 MiB: small arenas keep the pinned
     * host allocation (the slow part of opening) out of the boot budget */
    cfg.device_arena_bytes = 8u << 20;
    cfg.host_arena_bytes = 1u << 20;
    bc_device *dev = NULL;
    bc_status st = bc_device_open(&cfg, &dev);
    if (st) {
        r->failed = "open";
        return st;
    }
    bc_open_timings t;
    bc_device_open_timings(dev, &t);
    add_phase(r, "dlopen", "dlopen", t.dlopen_us, 0);
    add_phase(r, "cuinit", "cuInit", t.cuinit_us, 0);
    add_phase(r, "context", "context", t.context_us, 0);
    add_phase(r, "arenas", "arenas", t.arenas_us, 1);
    add_phase(r, "image_check", "image check", t.image_check_us, 1);
    add_phase(r, "module_load", "module load", t.module_load_us, 1);
    *out_dev = dev;
    return BC_OK;
}

static bc_status run_checks(bc_device *dev, boot_run *r, user_module *um)
{
    double t0 = mono_us();
    bc_stream *s = NULL;
    bc_status st = bc_stream_create(dev, 0, &s, NULL);
    if (st) {
        r->failed = "stream";
        return st;
    }
    add_phase(r, "stream", "stream", mono_us() - t0, 1);
    for (size_t i = 0; i < sizeof checks / sizeof checks[0] && st == BC_OK; i++)
        st = checks[i].run(dev, s, r);
    bc_stream_destroy(s);
    if (st == BC_OK && um->path)
        st = check_user_module(dev, um, r);
    return st;
}

/* Maps a failure to the exit code; a module file that cannot be read is an
 * image problem (20), like a corrupt one. */
static int module_exit_code(bc_status st, int in_checks)
{
    if (st == BC_ERR_FILE_IO || st == BC_ERR_NOT_REGULAR_FILE || st == BC_ERR_FILE_TOO_LARGE)
        return BC_EXIT_IMAGE;
    return exit_code(st, in_checks);
}

static int bad_option(const char *what, const char *value)
{
    fprintf(stderr, "barecuda boot: bad %s '%s'\n", what, value);
    usage(stderr);
    return BC_EXIT_USAGE;
}

int bc_cmd_boot(int argc, char **argv)
{
    int json = 0, ordinal = 0;
    uint32_t groups = 0;
    user_module um;
    memset(&um, 0, sizeof um);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--module") && i + 1 < argc) {
            um.path = argv[++i];
        } else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) {
            if (parse_kernels(&um, argv[++i]) != 0) {
                free(um.names_buf);
                return bad_option("kernel list (names separated by commas, at most 64)", argv[i]);
            }
        } else if (!strcmp(argv[i], "--digest") && i + 1 < argc) {
            if (parse_digest(&um, argv[++i]) != 0) {
                free(um.names_buf);
                return bad_option("digest (XXH64 in hexadecimal)", argv[i]);
            }
        } else if (!strcmp(argv[i], "--kernel-groups") && i + 1 < argc) {
            int g = 0;
            if (bc_cli_parse_set(argv[++i], group_names, (int)(sizeof group_names / sizeof group_names[0]), &g) != 0) {
                free(um.names_buf);
                return bad_option("kernel group list (resident, portable, stream-k or all, separated by commas)",
                                  argv[i]);
            }
            groups = (uint32_t)g;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            long long v = 0;
            if (!isdigit((unsigned char)argv[++i][0]) || bc_cli_parse_ll(argv[i], 0, 1024, &v)) {
                fprintf(stderr, "barecuda boot: bad device ordinal '%s' (0..1024)\n", argv[i]);
                free(um.names_buf);
                return BC_EXIT_USAGE;
            }
            ordinal = (int)v;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return BC_EXIT_OK;
        } else {
            static const char *const valued[] = {"--module", "--kernels", "--digest", "--kernel-groups", "--device"};
            int known = 0;
            for (size_t j = 0; j < sizeof valued / sizeof valued[0]; j++)
                known |= !strcmp(argv[i], valued[j]);
            if (known) /* the last word: its value is missing */
                fprintf(stderr, "barecuda boot: %s needs a value\n", argv[i]);
            else
                fprintf(stderr, "barecuda boot: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            free(um.names_buf);
            return BC_EXIT_USAGE;
        }
    }
    if (um.path == NULL && (um.count > 0 || um.check_digest)) {
        fprintf(stderr, "barecuda boot: --kernels and --digest go with --module FILE\n");
        free(um.names_buf);
        return BC_EXIT_USAGE;
    }
    boot_run r;
    memset(&r, 0, sizeof r);
    bc_device_info info;
    memset(&info, 0, sizeof info);
    int have_info = 0, in_checks = 0;
    bc_device *dev = NULL;
    bc_status st = open_device(ordinal, groups, &r, &dev);
    if (st == BC_OK) {
        have_info = bc_device_query(dev, &info) == BC_OK;
        in_checks = 1;
        st = run_checks(dev, &r, &um);
    }
    /* measured before close: "process start to verified" */
    double main_us = mono_us() - t_main_us, tick_us = 0;
    double exec_us = since_exec_us(&tick_us);
    int rc = st ? module_exit_code(st, in_checks) : BC_EXIT_OK;
    if (json)
        print_json(&r, &info, have_info, &um, st, rc, exec_us, tick_us, main_us);
    else
        print_text(&r, &info, have_info, &um, st, rc, exec_us, tick_us, main_us);
    if (st && json)
        bc_cli_report("boot", st); /* text mode printed it on stdout */
    /* bounded: after a hang a plain close would wait for the kernel for ever */
    if (dev != NULL)
        bc_device_close_timeout(dev, CLOSE_TIMEOUT_NS);
    free(um.names_buf);
    return rc;
}
