/* Small helpers shared by the bench and latency commands: strict option
 * parsing, dtype names, JSON strings, failure reports that name the call. */
#ifndef BC_TOOLS_CLI_UTIL_H
#define BC_TOOLS_CLI_UTIL_H

#include <stdint.h>
#include <stdio.h>

#include "barecuda.h"

/* "bf16", "f16"/"fp16", "f32"/"fp32" -> *out; 0 on success, -1 otherwise. */
int bc_cli_parse_dtype(const char *s, bc_dtype *out);
const char *bc_cli_dtype_name(bc_dtype t);

/* The whole of `s` as a decimal integer in [lo, hi]; 0 on success, -1 on
 * junk, overflow or a value outside the range (then *out is untouched). */
int bc_cli_parse_ll(const char *s, long long lo, long long hi, long long *out);

/* The whole of `s` as a finite number in [lo, hi]; 0 on success, -1 on
 * junk, overflow, NaN, infinity or a value outside the range (then *out is
 * untouched). */
int bc_cli_parse_double(const char *s, double lo, double hi, double *out);

/* A set of names[0..count) as a bit mask (bit i: names[i]): "all", or
 * names separated by commas; 0 on success, -1 on an unknown or empty name
 * (then *out is untouched). */
int bc_cli_parse_set(const char *s, const char *const *names, int count, int *out);

/* Whether `path` (the value of option `opt` of command `cmd`) can be
 * written, asked before any work: 0, or -1 after one line on stderr. The
 * file is opened for appending, so an existing one keeps its contents
 * until the command writes it. */
int bc_cli_check_writable(const char *cmd, const char *opt, const char *path);

/* Writes `s` as a JSON string literal, quotes included. */
void bc_cli_json_string(FILE *f, const char *s);

/* Prints one line to stderr: "barecuda <cmd>: <call> failed: <status>:
 * <detail> [driver call <name> -> <CUresult name>]"; <call> is cut at its
 * first '(' (a function's name from a stringified call). */
void bc_cli_report_call(const char *cmd, const char *call, bc_status st);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bc_cli_now_ns(void);

#endif
