/* Static checks of the built Blackwell kernels, which no machine here can
 * run (DESIGN.md, "Hardware reality"). Reads the build outputs, so run from
 * the repository root after `ninja build/kernels.fatbin` (BC_BUILD_DIR
 * overrides "build"): for each Blackwell target, every bc_gemm_sm100_*
 * kernel of the manifest is in the PTX with its tcgen05 instructions and
 * the instruction descriptor test_sm100_desc checks, and no local memory;
 * ptxas assembled it with no stack frame, no spills, and no error or
 * warning.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gemm_abi.h"

static const char *build_dir(void)
{
    const char *d = getenv("BC_BUILD_DIR");
    return d && *d ? d : "build";
}

/* Whole file, NUL-terminated; NULL (with a message) when missing. */
static char *slurp(const char *path, size_t *out_len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        print_error("cannot open %s: build it first (ninja build/kernels.fatbin)\n", path);
        return NULL;
    }
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap + 1);
    size_t r;
    while (buf && (r = fread(buf + len, 1, cap - len, f)) > 0) {
        len += r;
        if (len == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (nb == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) {
        buf[len] = 0;
        if (out_len)
            *out_len = len;
    }
    return buf;
}

typedef struct kentry {
    const char *sym, *family;
} kentry;

static const kentry manifest[] = {
#define K(id, sym, fam, smem) {#sym, #fam},
#include "manifest.h"
#undef K
};

typedef struct target {
    const char *name;   /* build/kernels/<name>.ptx, .cubin */
    const char *arch;   /* .target and ptxas arch */
    const char *ptxver; /* .version */
} target;

static const target targets[] = {
    {"sm100a", "sm_100a", "8.8"},
    {"sm100f", "sm_100f", "8.8"},
    {"sm103a", "sm_103a", "8.8"},
    {"sm110a", "sm_110a", "9.0"},
};

static int is_sm100_gemm(const kentry *k) { return strcmp(k->family, "SM100") == 0 && strncmp(k->sym, "bc_gemm_sm100_", 14) == 0; }

static void test_manifest_lists_six(void **state)
{
    (void)state;
    int n = 0;
    for (size_t i = 0; i < sizeof manifest / sizeof manifest[0]; i++)
        n += is_sm100_gemm(&manifest[i]);
    assert_int_equal(n, 6); /* {bf16, f16} x {bf16, f16, f32} */
}

/* The body of `.visible .entry sym(` up to its closing "\n}\n", copied. */
static char *ptx_function(const char *ptx, const char *sym)
{
    char head[160];
    snprintf(head, sizeof head, ".visible .entry %s(", sym);
    const char *s = strstr(ptx, head);
    if (s == NULL)
        return NULL;
    const char *e = strstr(s, "\n}\n");
    if (e == NULL)
        return NULL;
    size_t n = (size_t)(e - s) + 2;
    char *out = malloc(n + 1);
    if (out) {
        memcpy(out, s, n);
        out[n] = 0;
    }
    return out;
}

/* Each checker prints every problem it finds and returns their number; the
 * tests assert on it after freeing, so a failure leaks nothing. */
static int check_ptx(const target *t)
{
    static const char *const required[] = {
        "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",
        "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;",
        "tcgen05.mma.cta_group::1.kind::f16",
        "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64",
        "tcgen05.ld.sync.aligned.32x32b.x32.b32",
        "tcgen05.wait::ld.sync.aligned;",
        "tcgen05.fence::before_thread_sync;",
        "tcgen05.fence::after_thread_sync;",
        "tcgen05.dealloc.cta_group::1.sync.aligned.b32",
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
        "mbarrier.try_wait.parity",
        "cvta.param.u64", /* tensor maps read in parameter space */
    };
    static const char *const forbidden[] = {".local", "__local_depot", "cta_group::2"};
    char path[512];
    snprintf(path, sizeof path, "%s/kernels/%s.ptx", build_dir(), t->name);
    char *ptx = slurp(path, NULL);
    if (ptx == NULL)
        return 1;
    int bad = 0;
    char line[64];
    snprintf(line, sizeof line, "\n.target %s\n", t->arch);
    if (strstr(ptx, line) == NULL)
        bad++, print_error("%s: no \".target %s\" line\n", path, t->arch);
    snprintf(line, sizeof line, "\n.version %s\n", t->ptxver);
    if (strstr(ptx, line) == NULL)
        bad++, print_error("%s: no \".version %s\" line\n", path, t->ptxver);

    for (size_t i = 0; i < sizeof manifest / sizeof manifest[0]; i++) {
        const kentry *k = &manifest[i];
        if (!is_sm100_gemm(k))
            continue;
        char *fn = ptx_function(ptx, k->sym);
        if (fn == NULL) {
            bad++, print_error("%s: no kernel %s\n", path, k->sym);
            continue;
        }
        for (size_t r = 0; r < sizeof required / sizeof required[0]; r++)
            if (strstr(fn, required[r]) == NULL)
                bad++, print_error("%s: %s lacks \"%s\"\n", path, k->sym, required[r]);
        for (size_t r = 0; r < sizeof forbidden / sizeof forbidden[0]; r++)
            if (strstr(fn, forbidden[r]) != NULL)
                bad++, print_error("%s: %s contains \"%s\"\n", path, k->sym, forbidden[r]);
        /* the instruction descriptor the kernel passes is the one that
         * CUTLASS's make_instr_desc gives for its shape and types
         * (test_sm100_desc.c): 0x08400490 = 138413200 (bf16 inputs),
         * 0x08400010 = 138412048 (f16 inputs) */
        const char *idesc = strncmp(k->sym, "bc_gemm_sm100_bf16_", 19) == 0 ? " 138413200;" : " 138412048;";
        if (strstr(fn, idesc) == NULL)
            bad++, print_error("%s: %s lacks the immediate instruction descriptor%s\n", path, k->sym, idesc);
        free(fn);
    }
    free(ptx);
    return bad;
}

static int check_ptxas(const target *t)
{
    char path[512];
    snprintf(path, sizeof path, "%s/kernels/%s.cubin", build_dir(), t->name);
    size_t len = 0;
    char *cubin = slurp(path, &len);
    if (cubin == NULL)
        return 1;
    int bad = 0;
    if (len <= 64 || memcmp(cubin, "\177ELF", 4) != 0)
        bad++, print_error("%s: not an ELF cubin\n", path);
    free(cubin);

    snprintf(path, sizeof path, "%s/kernels/%s.cubin.ptxas.txt", build_dir(), t->name);
    char *rep = slurp(path, NULL);
    if (rep == NULL)
        return bad + 1;
    /* ptxas rejected nothing and had nothing to say beyond `info` lines */
    for (char *l = rep; *l;) {
        char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        if (!(n == 0 || strncmp(l, "ptxas info    :", 15) == 0 || strncmp(l, "    ", 4) == 0))
            bad++, print_error("%s: unexpected ptxas output: %.*s\n", path, (int)n, l);
        l += n + (nl ? 1 : 0);
    }
    for (size_t i = 0; i < sizeof manifest / sizeof manifest[0]; i++) {
        const kentry *k = &manifest[i];
        if (!is_sm100_gemm(k))
            continue;
        char want[256];
        snprintf(want, sizeof want, "Compiling entry function '%s' for '%s'", k->sym, t->arch);
        if (strstr(rep, want) == NULL)
            bad++, print_error("%s: ptxas did not compile %s for %s\n", path, k->sym, t->arch);
        snprintf(want, sizeof want,
                 "Function properties for %s\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
                 k->sym);
        if (strstr(rep, want) == NULL)
            bad++, print_error("%s: %s has a stack frame or spills\n", path, k->sym);
    }
    free(rep);
    return bad;
}

static void check_built(const target *t)
{
    int bad = check_ptx(t) + check_ptxas(t);
    assert_int_equal(bad, 0);
}

static void test_built_sm100a(void **state) { (void)state; check_built(&targets[0]); }
static void test_built_sm100f(void **state) { (void)state; check_built(&targets[1]); }
static void test_built_sm103a(void **state) { (void)state; check_built(&targets[2]); }
static void test_built_sm110a(void **state) { (void)state; check_built(&targets[3]); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_lists_six),
        cmocka_unit_test(test_built_sm100a),
        cmocka_unit_test(test_built_sm100f),
        cmocka_unit_test(test_built_sm103a),
        cmocka_unit_test(test_built_sm110a),
    };
    return cmocka_run_group_tests_name("sm100_built", tests, NULL, NULL);
}
