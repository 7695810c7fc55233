/* barecuda: command-line front end (the library itself never prints). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"info", bc_cmd_info, "driver version and every device's properties"},
    {"boot", bc_cmd_boot, "boot-time smoke test: open, check, load, run a known answer"},
    {"fatbin", bc_cmd_fatbin, "inspect a fatbin: one row per entry (--json)"},
    {"gemm", bc_cmd_gemm, "run one GEMM on random data and check it against the CPU"},
    {"bench", bc_cmd_bench, "time GEMM shapes (device time per GEMM)"},
    {"latency", bc_cmd_latency, "end-to-end latency distribution of a GEMM plan or an MLP, launched or resident"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: barecuda <command> [options]   (barecuda <command> --help)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
}

int bc_cli_exit_code(bc_status st)
{
    switch (st) {
    case BC_OK:
        return BC_EXIT_OK;
    case BC_ERR_NO_DRIVER:
    case BC_ERR_DRIVER_STUB:
        return BC_EXIT_NO_DRIVER;
    case BC_ERR_DRIVER_TOO_OLD:
    case BC_ERR_MISSING_ENTRY_POINT:
        return BC_EXIT_DRIVER_OLD;
    case BC_ERR_NO_DEVICE:
        return BC_EXIT_NO_DEVICE;
    case BC_ERR_FATBIN_CORRUPT:
    case BC_ERR_DIGEST_MISMATCH:
    case BC_ERR_FATBIN_COMPRESSED:
        return BC_EXIT_IMAGE;
    case BC_ERR_UNSUPPORTED_ARCH:
    case BC_ERR_NO_KERNEL_FOR_DEVICE:
        return BC_EXIT_ARCH;
    case BC_ERR_MODULE_LOAD:
    case BC_ERR_MISSING_KERNEL:
        return BC_EXIT_LOAD;
    case BC_ERR_DEVICE_LOST:
        return BC_EXIT_DEVICE_LOST;
    case BC_ERR_VERIFY_FAILED:
        return BC_EXIT_VERIFY;
    case BC_ERR_TIMEOUT:
        return BC_EXIT_TIMEOUT;
    default:
        return BC_EXIT_ERROR;
    }
}

const char *bc_cli_recovery(bc_status st)
{
    if (st == BC_ERR_DEVICE_LOST)
        return "the GPU is lost to this process: CUDA cannot recover from a sticky fault without a process "
               "restart. Run GPU work in a worker process under a supervisor that restarts it when it exits "
               "with 33 (device lost) or 32 (hang).";
    if (st == BC_ERR_TIMEOUT)
        return "the GPU did not finish: work that never ends cannot be abandoned (closing waits for it), so "
               "the device was left running and only a process restart returns it to a known state. Run GPU "
               "work in a worker process under a supervisor that restarts it when it exits with 32 (hang) or "
               "33 (device lost).";
    return NULL;
}

void bc_cli_report(const char *cmd, bc_status st)
{
    bc_error_detail d;
    bc_last_error(&d);
    if (d.status == st && d.message[0])
        fprintf(stderr, "barecuda %s: %s: %s\n", cmd, bc_status_string(st), d.message);
    else
        fprintf(stderr, "barecuda %s: %s\n", cmd, bc_status_string(st));
    if (bc_cli_recovery(st))
        fprintf(stderr, "barecuda %s: %s\n", cmd, bc_cli_recovery(st));
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? BC_EXIT_USAGE : BC_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "barecuda: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return BC_EXIT_USAGE;
}
