/* Test helper: runs the barecuda CLI in-process (tools/cli/main.c linked
 * with main renamed bc_cli_main) with stdout and stderr captured into
 * malloc'd strings, so the tests see exactly what a user would, exit code
 * included. */
#ifndef BC_TESTS_CLI_RUN_H
#define BC_TESTS_CLI_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int bc_cli_main(int argc, char **argv);

typedef struct cli_capture {
    int rc;
    char *out, *err; /* NUL-terminated; cli_capture_free releases them */
} cli_capture;

/* The whole file at `path` as a string; the file is removed. */
static inline char *cli_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    unlink(path);
    return buf;
}

/* Runs bc_cli_main(argc, argv) with both streams redirected to files. */
static inline void cli_capture_run(cli_capture *c, int argc, char **argv)
{
    char out_path[] = "/tmp/bc_cli_out_XXXXXX", err_path[] = "/tmp/bc_cli_err_XXXXXX";
    int fo = mkstemp(out_path), fe = mkstemp(err_path);
    assert_true(fo >= 0 && fe >= 0);
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    dup2(fo, 1);
    dup2(fe, 2);
    close(fo);
    close(fe);
    c->rc = bc_cli_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    c->out = cli_slurp(out_path);
    c->err = cli_slurp(err_path);
}

static inline void cli_capture_free(cli_capture *c) { free(c->out), free(c->err); }

/* Runs `barecuda args...` (args NULL-terminated, at most 30). */
static inline void cli_run_args(cli_capture *c, const char *const *args)
{
    char *argv[32] = {"barecuda"};
    int argc = 1;
    for (; args[argc - 1] != NULL && argc < 31; argc++)
        argv[argc] = (char *)args[argc - 1];
    argv[argc] = NULL;
    cli_capture_run(c, argc, argv);
}

static inline size_t cli_count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* Copies a capture into fixed buffers (truncating) and frees it. */
static inline void cli_capture_copy(cli_capture *c, char *out, size_t out_cap, char *err, size_t err_cap)
{
    snprintf(out, out_cap, "%s", c->out);
    snprintf(err, err_cap, "%s", c->err);
    cli_capture_free(c);
}

#endif
