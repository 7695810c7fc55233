/* Static checks of the Blackwell (tcgen05) GEMM, which no machine here can
 * run (DESIGN.md, "Hardware reality").
 *
 * 1. The descriptor encoders of kernels_ptx/sm100_desc.h against the PTX ISA
 *    9.1 bit tables (reference/ptx-facts.md §4.1 instruction descriptor,
 *    §4.3 shared-memory descriptor, §4.4 TMEM address). Every expected value
 *    is either a literal worked out by hand in the comment beside it, or
 *    built here from shifts of the documented fields; never by calling the
 *    code under test.
 * 2. The built kernels (reads the build outputs, so run from the repository
 *    root after `ninja build/kernels.fatbin`; BC_BUILD_DIR overrides
 *    "build"): for each Blackwell target, every bc_gemm_sm100_* kernel of the
 *    manifest is in the PTX with its tcgen05 instructions and no local
 *    memory, and ptxas assembled it with no stack frame, no spills, and no
 *    error or warning.
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
#include "sm100_desc.h"

/* ---------------------------------------------------------------- expected values from the tables */

/* Instruction descriptor, kind::f16 (PTX ISA 9.1 §9.7.16.4.2 Table 42):
 * D format at bit 4, A format at 7, B format at 10, A major at 15, B major
 * at 16, N>>3 at 17, M>>4 at 24; every other field 0 for a dense,
 * non-negated, non-saturating MMA. */
static uint32_t idesc_expected(uint32_t d_fmt, uint32_t a_fmt, uint32_t b_fmt, uint32_t a_major,
                               uint32_t b_major, uint32_t n, uint32_t m)
{
    return (d_fmt << 4) | (a_fmt << 7) | (b_fmt << 10) | (a_major << 15) | (b_major << 16) | ((n >> 3) << 17) |
           ((m >> 4) << 24);
}

/* Shared-memory descriptor (§9.7.16.4.1 Table 40): start>>4 at 0 (14 bits),
 * LBO>>4 at 16 (14 bits), SBO>>4 at 32 (14 bits), fixed 0b001 at 46-48,
 * base offset 0 at 49, LBO mode 0 at 52, layout type at 61 (2 = 128B). */
static uint64_t sdesc_expected(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((addr & 0x3FFFFu) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32) |
           (1ull << 46) | (2ull << 61);
}

/* ---------------------------------------------------------------- instruction descriptor */

static void test_idesc_worked_values(void **state)
{
    (void)state;
    /* bf16 x bf16 -> f32, K-major A and B, M=128, N=256:
     *   D=F32 1<<4 = 0x10; A=BF16 1<<7 = 0x80; B=BF16 1<<10 = 0x400;
     *   N>>3 = 32, 32<<17 = 0x400000; M>>4 = 8, 8<<24 = 0x08000000
     *   sum 0x08400490 (the kernel's bf16 descriptor). */
    assert_int_equal(bc_sm100_idesc_f16(BC_SM100_FMT_BF16, BC_SM100_FMT_BF16, 1, 128, 256, BC_SM100_K_MAJOR,
                                        BC_SM100_K_MAJOR),
                     0x08400490u);
    /* same, N=128: N>>3 = 16, 16<<17 = 0x200000 -> 0x08200490 */
    assert_int_equal(bc_sm100_idesc_f16(1, 1, 1, 128, 128, 0, 0), 0x08200490u);
    /* same, M=64, N=256: M>>4 = 4, 4<<24 = 0x04000000 -> 0x04400490 */
    assert_int_equal(bc_sm100_idesc_f16(1, 1, 1, 64, 256, 0, 0), 0x04400490u);
    /* f16 inputs (A, B format 0), f32 out, M=128, N=256: 0x10 + 0x400000 +
     * 0x08000000 = 0x08400010 (the kernel's f16 descriptor) */
    assert_int_equal(bc_sm100_idesc_f16(BC_SM100_FMT_F16, BC_SM100_FMT_F16, 1, 128, 256, 0, 0), 0x08400010u);
    /* bf16, B N-major (transpose B, bit 16 = 0x10000): 0x08410490 */
    assert_int_equal(bc_sm100_idesc_f16(1, 1, 1, 128, 256, BC_SM100_K_MAJOR, BC_SM100_MN_MAJOR), 0x08410490u);
    /* bf16, A M-major (bit 15 = 0x8000): 0x08408490 */
    assert_int_equal(bc_sm100_idesc_f16(1, 1, 1, 128, 256, BC_SM100_MN_MAJOR, BC_SM100_K_MAJOR), 0x08408490u);
    /* f16 accumulator (D format 0), f16 in, M=128, N=16: N>>3 = 2 -> 0x40000;
     * 0x08000000 + 0x40000 = 0x08040000 */
    assert_int_equal(bc_sm100_idesc_f16(0, 0, 0, 128, 16, 0, 0), 0x08040000u);
}

/* Every legal cta_group::1 kind::f16 shape with M=128 (N % 16) and M=64
 * (N % 8), both input types, both accumulators, all majors: the encoder
 * equals the field-by-field value and leaves every reserved or
 * unused field (bits 0-3, 6, 13-14, 23, 29-31) zero. */
static void test_idesc_all_shapes(void **state)
{
    (void)state;
    const uint32_t zero_mask = 0xFu | (1u << 6) | (3u << 13) | (1u << 23) | (7u << 29);
    int checked = 0;
    for (uint32_t m = 64; m <= 128; m += 64)
        for (uint32_t n = 8; n <= 256; n += 8) {
            if (m == 128 && n % 16)
                continue; /* ptx-facts U11: N % 16 for M = 128 */
            for (uint32_t fmt = 0; fmt < 2; fmt++)
                for (uint32_t d = 0; d < 2; d++)
                    for (uint32_t maj = 0; maj < 4; maj++) {
                        uint32_t got = bc_sm100_idesc_f16(fmt, fmt, d, m, n, maj & 1, maj >> 1);
                        assert_int_equal(got, idesc_expected(d, fmt, fmt, maj & 1, maj >> 1, n, m));
                        assert_int_equal(got & zero_mask, 0);
                        /* decode back */
                        assert_int_equal((got >> 17) & 0x3F, n / 8);
                        assert_int_equal((got >> 24) & 0x1F, m / 16);
                        assert_int_equal((got >> 4) & 3, d);
                        assert_int_equal((got >> 7) & 7, fmt);
                        assert_int_equal((got >> 10) & 7, fmt);
                        checked++;
                    }
        }
    assert_int_equal(checked, (32 + 16) * 2 * 2 * 4);
}

/* ---------------------------------------------------------------- shared-memory descriptor */

static void test_sdesc_worked_value(void **state)
{
    (void)state;
    /* base 0x400, LBO 16, SBO 1024:
     *   start 0x400>>4 = 0x40; LBO 16>>4 = 1 -> 1<<16 = 0x10000;
     *   SBO 1024>>4 = 64 -> 64<<32 = 0x40_0000_0000; bit 46 = 0x4000_0000_0000;
     *   layout 2<<61 = 0x4000_0000_0000_0000  => 0x4000404000010040 */
    assert_true(bc_sm100_smem_desc_sw128(0x400, 16, 1024) == 0x4000404000010040ull);
    assert_true(sdesc_expected(0x400, 16, 1024) == 0x4000404000010040ull);
}

/* The descriptors the kernel builds: stage s at base + s*49152 (A 16 KiB,
 * then B 32 KiB), k16 step ks at +32*ks bytes, LBO 16, SBO 1024. */
static void test_sdesc_kernel_stages(void **state)
{
    (void)state;
    const uint64_t hi = 0x4000404000010000ull; /* layout 2, bit 46, SBO 64, LBO 1 */
    /* base 0x400, stage 0, A, ks 1: 0x420 >> 4 = 0x42 */
    assert_true(bc_sm100_smem_desc_sw128(0x400 + 32, 16, 1024) == (hi | 0x42));
    /* stage 0, B: 0x400 + 0x4000 = 0x4400 -> 0x440 */
    assert_true(bc_sm100_smem_desc_sw128(0x400 + BC_SM100_A_STAGE_BYTES, 16, 1024) == (hi | 0x440));
    /* stage 2, A, ks 2: 0x400 + 2*0xC000 + 0x40 = 0x18440 -> 0x1844 */
    assert_true(bc_sm100_smem_desc_sw128(0x400 + 2 * BC_SM100_STAGE_BYTES + 64, 16, 1024) == (hi | 0x1844));
    /* stage 3, B, ks 3: 0x400 + 3*0xC000 + 0x4000 + 0x60 = 0x28460 -> 0x2846 */
    assert_true(bc_sm100_smem_desc_sw128(0x400 + 3 * BC_SM100_STAGE_BYTES + BC_SM100_A_STAGE_BYTES + 96, 16,
                                         1024) == (hi | 0x2846));
    /* every descriptor of the ring, for aligned bases from the start of the
     * shared window (sm_90+ reserve its first 1 KiB: dynamic shared memory
     * starts at 0x400) to the highest one the 1 KiB alignment slack allows;
     * the last byte stays below 2^18, so the 14-bit start field holds it */
    for (uint32_t base = 0x400; base <= 0x800; base += 0x400)
    for (uint32_t s = 0; s < BC_SM100_STAGES; s++)
        for (uint32_t ks = 0; ks < BC_SM100_BK / 16; ks++)
            for (uint32_t b = 0; b < 2; b++) {
                uint32_t a = base + s * BC_SM100_STAGE_BYTES + b * BC_SM100_A_STAGE_BYTES + 32 * ks;
                uint64_t d = bc_sm100_smem_desc_sw128(a, 16, 1024);
                assert_true(d == sdesc_expected(a, 16, 1024));
                assert_int_equal(d & 0x3FFF, a >> 4);      /* start field */
                assert_int_equal((d >> 49) & 7, 0);        /* base offset: atoms 1024-aligned */
            }
}

static void test_sdesc_fields(void **state)
{
    (void)state;
    const uint32_t addrs[] = {0, 0x10, 0x400, 0x1230, 0x3FFF0, 0x40400 /* wraps: bit 18 dropped */};
    const uint32_t lbos[] = {16, 1024, 8192};
    const uint32_t sbos[] = {1024, 2048};
    for (size_t i = 0; i < sizeof addrs / sizeof addrs[0]; i++)
        for (size_t j = 0; j < sizeof lbos / sizeof lbos[0]; j++)
            for (size_t k = 0; k < sizeof sbos / sizeof sbos[0]; k++) {
                uint64_t d = bc_sm100_smem_desc_sw128(addrs[i], lbos[j], sbos[k]);
                assert_true(d == sdesc_expected(addrs[i], lbos[j], sbos[k]));
                assert_int_equal(d & 0x3FFF, (addrs[i] & 0x3FFFF) >> 4);
                assert_int_equal((d >> 16) & 0x3FFF, lbos[j] >> 4);
                assert_int_equal((d >> 32) & 0x3FFF, sbos[k] >> 4);
                assert_int_equal((d >> 46) & 7, 1);  /* fixed 0b001 */
                assert_int_equal((d >> 49) & 7, 0);  /* base offset */
                assert_int_equal((d >> 52) & 1, 0);  /* LBO mode: relative */
                assert_int_equal((d >> 53) & 0xFF, 0);
                assert_int_equal((d >> 14) & 3, 0);
                assert_int_equal((d >> 30) & 3, 0);
                assert_int_equal(d >> 61, 2);        /* SWIZZLE_128B */
                /* same word as the sm_90 wgmma descriptor (128B = 1 at bit 62),
                 * plus bit 46 (ptx-facts §4.3) */
                uint64_t sm90 = (1ull << 62) | ((uint64_t)(sbos[k] >> 4) << 32) | ((uint64_t)(lbos[j] >> 4) << 16) |
                                ((addrs[i] & 0x3FFFF) >> 4);
                assert_true(d == (sm90 | (1ull << 46)));
            }
}

/* ---------------------------------------------------------------- TMEM addresses and the config */

static void test_tmem_addresses(void **state)
{
    (void)state;
    assert_int_equal(bc_sm100_tmem_addr(0, 0), 0);
    assert_int_equal(bc_sm100_tmem_addr(96, 256 + 32), (96u << 16) | 288u);
    assert_int_equal(bc_sm100_tmem_addr(127, 511), 0x007F01FFu);
    /* epilogue warps 2,3,4,5 own lane quarters 2,3,0,1 (lane base 32*(w%4)) */
    const uint32_t want[4] = {64, 96, 0, 32};
    uint32_t seen = 0;
    for (uint32_t w = 2; w < 6; w++) {
        assert_int_equal(bc_sm100_tmem_lane_base(w), want[w - 2]);
        seen |= 1u << (bc_sm100_tmem_lane_base(w) / 32);
    }
    assert_int_equal(seen, 0xF); /* the 4 epilogue warps cover all 128 lanes once */
    assert_int_equal(BC_SM100_THREADS, 32 * 2 + BC_SM100_EPI_THREADS);
}

static void test_config_budget(void **state)
{
    (void)state;
    /* two 256-column f32 accumulators = all 512 TMEM columns */
    assert_int_equal(BC_SM100_TMEM_COLS, 512);
    assert_int_equal(BC_SM100_STAGE_BYTES, (128 + 256) * 64 * 2);
    /* fits the 227 KiB per-block opt-in of sm_100 ... */
    assert_true(BC_SM100_SMEM_BYTES <= 227 * 1024);
    /* ... and two CTAs never fit the 228 KiB SM, so a CTA holding all of
     * TMEM never blocks a second CTA of this kernel on its SM */
    assert_true(2 * BC_SM100_SMEM_BYTES > 228 * 1024);
}

/* ---------------------------------------------------------------- the built kernels */

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
        /* the instruction descriptor the kernel passes is the checked one:
         * 0x08400490 = 138413200 (bf16), 0x08400010 = 138412048 (f16) */
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
        cmocka_unit_test(test_idesc_worked_values),
        cmocka_unit_test(test_idesc_all_shapes),
        cmocka_unit_test(test_sdesc_worked_value),
        cmocka_unit_test(test_sdesc_kernel_stages),
        cmocka_unit_test(test_sdesc_fields),
        cmocka_unit_test(test_tmem_addresses),
        cmocka_unit_test(test_config_budget),
        cmocka_unit_test(test_manifest_lists_six),
        cmocka_unit_test(test_built_sm100a),
        cmocka_unit_test(test_built_sm100f),
        cmocka_unit_test(test_built_sm103a),
        cmocka_unit_test(test_built_sm110a),
    };
    return cmocka_run_group_tests_name("sm100_desc", tests, NULL, NULL);
}
