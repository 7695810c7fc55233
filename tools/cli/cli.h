/* The barecuda command: one function per subcommand, shared helpers. */
#ifndef BC_TOOLS_CLI_H
#define BC_TOOLS_CLI_H

#include "barecuda.h"

/* Exit codes (documented in README.md, "Exit codes"): a boot script or a
 * systemd unit can act on the failure class. */
enum {
    BC_EXIT_OK = 0,
    BC_EXIT_ERROR = 1,          /* anything not listed below */
    BC_EXIT_USAGE = 2,          /* bad command line */
    BC_EXIT_NO_DRIVER = 10,     /* no NVIDIA driver (libcuda.so.1 missing or the toolkit stub) */
    BC_EXIT_DRIVER_OLD = 11,    /* driver older than CUDA 12.0, or lacks an entry point */
    BC_EXIT_NO_DEVICE = 12,     /* driver present, no usable device */
    BC_EXIT_IMAGE = 20,         /* embedded fatbin corrupt or digest mismatch */
    BC_EXIT_ARCH = 21,          /* no kernel image for this GPU */
    BC_EXIT_LOAD = 22,          /* the driver refused the image, or a kernel is missing */
    BC_EXIT_LAUNCH = 30,        /* a launch failed */
    BC_EXIT_VERIFY = 31,        /* a known-answer or reference check computed wrong results */
    BC_EXIT_TIMEOUT = 32,       /* the GPU did not finish within the wait bound: restart the process */
    BC_EXIT_DEVICE_LOST = 33,   /* the GPU faulted (sticky error): lost to the process, restart it */
};

/* Maps a failing status to its exit code. */
int bc_cli_exit_code(bc_status st);

/* For a status after which only a process restart recovers
 * (BC_ERR_DEVICE_LOST, BC_ERR_TIMEOUT), the advice to print; else NULL. */
const char *bc_cli_recovery(bc_status st);

/* Prints "barecuda <cmd>: <status string>: <detail>" to stderr. */
void bc_cli_report(const char *cmd, bc_status st);

int bc_cmd_info(int argc, char **argv);
int bc_cmd_boot(int argc, char **argv);
int bc_cmd_fatbin(int argc, char **argv);
int bc_cmd_gemm(int argc, char **argv);
int bc_cmd_bench(int argc, char **argv);
int bc_cmd_latency(int argc, char **argv);

#endif
