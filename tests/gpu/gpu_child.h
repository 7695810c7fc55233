/* Runs a GPU scenario in a child process (fork), so that a fault or a hang
 * costs the child, never the test runner. The parent must not have touched
 * CUDA (a child of an initialised process cannot use it). The child reports
 * rows over a pipe:
 *
 *   row <step> <STATUS> <ms> <note...>     one measured step
 *   skip <reason>                          no usable GPU: the test is skipped
 *
 * and the parent collects them (child_find) and prints them as a table. */
#ifndef BC_TESTS_GPU_CHILD_H
#define BC_TESTS_GPU_CHILD_H

#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "barecuda.h"

#define CHILD_MAX_ROWS 48

typedef struct child_row {
    char step[48];
    char status[40]; /* BC_OK, BC_ERR_..., or a CUresult as CU<n> */
    double ms;
    char note[160];
} child_row;

typedef struct child_result {
    int rows;
    child_row row[CHILD_MAX_ROWS];
    int skipped;
    char skip_reason[256];
    int exit_code;   /* -1 unless exited */
    int signal;      /* 0 unless killed by a signal */
    int timed_out;   /* killed by the parent after the limit */
    double wall_ms;
} child_result;

static inline double child_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* In the child: the short name of a status ("BC_ERR_DEVICE_LOST"). */
static inline const char *child_code(bc_status st, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", bc_status_string(st));
    buf[strcspn(buf, ":")] = '\0';
    return buf;
}

static int child_fd = -1;

/* In the child: one row. `fmt` formats the note (may be ""). */
static inline void child_row_out(const char *step, const char *status, double ms, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline void child_row_out(const char *step, const char *status, double ms, const char *fmt, ...)
{
    char note[160], line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, sizeof note, fmt, ap);
    va_end(ap);
    for (char *p = note; *p; p++)
        if (*p == '\n')
            *p = ' ';
    int n = snprintf(line, sizeof line, "row %s %s %.3f %s\n", step, status, ms, note);
    if (n > 0 && write(child_fd, line, (size_t)n) < 0)
        _exit(3);
}

/* In the child: a row for a barecuda status, the note being bc_last_error's call. */
static inline void child_status(const char *step, bc_status st, double ms)
{
    char code[64];
    bc_error_detail d;
    bc_last_error(&d);
    child_row_out(step, child_code(st, code, sizeof code), ms, "%s", st && d.status == st ? d.call : "");
}

static inline void child_skip(const char *why)
{
    char line[300];
    int n = snprintf(line, sizeof line, "skip %s\n", why);
    if (n > 0 && write(child_fd, line, (size_t)n) < 0)
        _exit(3);
}

static inline void parse_rows(child_result *r, char *text)
{
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "skip ", 5) == 0) {
            r->skipped = 1;
            snprintf(r->skip_reason, sizeof r->skip_reason, "%s", line + 5);
        } else if (strncmp(line, "row ", 4) == 0 && r->rows < CHILD_MAX_ROWS) {
            child_row *w = &r->row[r->rows];
            int used = 0;
            if (sscanf(line + 4, "%47s %39s %lf %n", w->step, w->status, &w->ms, &used) >= 3) {
                snprintf(w->note, sizeof w->note, "%s", used ? line + 4 + used : "");
                r->rows++;
            }
        }
    }
}

/* Runs fn() in a child with a wall-clock limit; collects its rows. */
static inline void child_run(void (*fn)(void), unsigned limit_s, child_result *r)
{
    memset(r, 0, sizeof *r);
    r->exit_code = -1;
    int fds[2];
    if (pipe(fds) != 0) {
        r->exit_code = 100;
        return;
    }
    fflush(stdout);
    fflush(stderr);
    const double t0 = child_now_ms();
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        child_fd = fds[1];
        fn();
        _exit(0);
    }
    close(fds[1]);
    static char text[65536];
    size_t len = 0;
    for (;;) {
        const double left = limit_s * 1e3 - (child_now_ms() - t0);
        struct pollfd p = {fds[0], POLLIN, 0};
        if (left <= 0 || poll(&p, 1, (int)left) == 0) {
            kill(pid, SIGKILL);
            r->timed_out = 1;
            break;
        }
        ssize_t n = read(fds[0], text + len, sizeof text - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fds[0]);
    int ws = 0;
    waitpid(pid, &ws, 0);
    r->wall_ms = child_now_ms() - t0;
    if (WIFEXITED(ws))
        r->exit_code = WEXITSTATUS(ws);
    if (WIFSIGNALED(ws))
        r->signal = WTERMSIG(ws);
    text[len] = '\0';
    parse_rows(r, text);
}

/* The row for `step`, or NULL. */
static inline const child_row *child_find(const child_result *r, const char *step)
{
    for (int i = 0; i < r->rows; i++)
        if (strcmp(r->row[i].step, step) == 0)
            return &r->row[i];
    return NULL;
}

/* Prints the scenario's rows as a table: scenario | step | status | ms | note. */
static inline void child_print(const char *scenario, const child_result *r)
{
    printf("  %-14s | %-28s | %-26s | %10s | %s\n", "scenario", "step", "status", "ms", "note");
    for (int i = 0; i < r->rows; i++)
        printf("  %-14s | %-28s | %-26s | %10.3f | %s\n", scenario, r->row[i].step, r->row[i].status, r->row[i].ms,
               r->row[i].note);
    printf("  %-14s | %-28s | exit %d signal %d%s | %10.1f |\n", scenario, "(child)", r->exit_code, r->signal,
           r->timed_out ? " TIMED OUT" : "", r->wall_ms);
    fflush(stdout);
}

#endif
