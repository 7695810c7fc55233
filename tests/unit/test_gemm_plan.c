/* GEMM plans on the fake driver: every validation rule has its own status and
 * names its field; the packed launch (grid, block, cluster, shared memory,
 * parameter bytes and tensor maps) is what the kernels expect; a launch is
 * exactly one driver call and no heap allocation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gemm_plan_env.h"

#include "heap_count.h" /* the binary links with --wrap=malloc,calloc,realloc,aligned_alloc */

static void test_validation_rules(void **state)
{
    env e;
    env_open(&e, 1);
    bc_gemm_plan *plan = NULL;
    bc_gemm_desc d = base_desc(&e, 64, 64, 64);
    assert_status(bc_gemm_plan_create(NULL, &d, &plan), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_gemm_plan_create(e.dev, NULL, &plan), BC_ERR_INVALID_ARGUMENT);
    assert_status(bc_gemm_plan_create(e.dev, &d, NULL), BC_ERR_INVALID_ARGUMENT);

    static const int64_t bad_dims[][3] = {{0, 8, 8}, {8, 0, 8}, {8, 8, 0}, {-1, 8, 8}, {1ll << 31, 8, 8},
                                          {8, 1ll << 31, 8}, {8, 8, 1ll << 31}};
    for (size_t i = 0; i < sizeof bad_dims / sizeof bad_dims[0]; i++) {
        d = base_desc(&e, bad_dims[i][0], bad_dims[i][1], bad_dims[i][2]);
        expect_reject(&e, &d, BC_ERR_BAD_SHAPE, "shape");
    }
    d = base_desc(&e, 64, 64, 64), d.ab_type = BC_DTYPE_F32;
    expect_reject(&e, &d, BC_ERR_UNSUPPORTED_TYPES, "ab_type");
    d = base_desc(&e, 64, 64, 64), d.d_type = (bc_dtype)7;
    expect_reject(&e, &d, BC_ERR_UNSUPPORTED_TYPES, "d_type");
    d = base_desc(&e, 64, 64, 12); /* 24-byte rows */
    expect_reject(&e, &d, BC_ERR_K_ALIGNMENT, "K");

    d = base_desc(&e, 64, 64, 64), d.lda = 32;
    expect_reject(&e, &d, BC_ERR_BAD_LEADING_DIM, "lda");
    d = base_desc(&e, 64, 64, 64), d.lda = 68; /* 136-byte rows */
    expect_reject(&e, &d, BC_ERR_BAD_LEADING_DIM, "lda");
    d = base_desc(&e, 64, 64, 64), d.ldb = 63;
    expect_reject(&e, &d, BC_ERR_BAD_LEADING_DIM, "ldb");
    d = base_desc(&e, 64, 64, 64), d.ldd = 63;
    expect_reject(&e, &d, BC_ERR_BAD_LEADING_DIM, "ldd");
    d = base_desc(&e, 64, 64, 64), d.ldd = 1ll << 31;
    expect_reject(&e, &d, BC_ERR_BAD_LEADING_DIM, "ldd");
    d = base_desc(&e, 64, 64, 64), d.beta = 1.0f, d.c = e.c, d.ldc = 10;
    expect_reject(&e, &d, BC_ERR_BAD_LEADING_DIM, "ldc");

    d = base_desc(&e, 64, 64, 64), d.a = 0;
    expect_reject(&e, &d, BC_ERR_NULL_POINTER, "a");
    d = base_desc(&e, 64, 64, 64), d.b = 0;
    expect_reject(&e, &d, BC_ERR_NULL_POINTER, "b");
    d = base_desc(&e, 64, 64, 64), d.d = 0;
    expect_reject(&e, &d, BC_ERR_NULL_POINTER, "d");
    d = base_desc(&e, 64, 64, 64), d.beta = 0.5f;
    expect_reject(&e, &d, BC_ERR_NULL_POINTER, "c");
    d = base_desc(&e, 64, 64, 64), d.a = e.a + 8;
    expect_reject(&e, &d, BC_ERR_MISALIGNED, "a");
    d = base_desc(&e, 64, 64, 64), d.b = e.b + 2;
    expect_reject(&e, &d, BC_ERR_MISALIGNED, "b");
    d = base_desc(&e, 64, 64, 64), d.d = e.d + 4;
    expect_reject(&e, &d, BC_ERR_MISALIGNED, "d");
    d = base_desc(&e, 64, 64, 64), d.beta = 1.0f, d.c = e.c + 8;
    expect_reject(&e, &d, BC_ERR_MISALIGNED, "c");
    d = base_desc(&e, 64, 64, 64), d.bias = e.bias + 2;
    expect_reject(&e, &d, BC_ERR_MISALIGNED, "bias");
    d = base_desc(&e, 64, 64, 64), d.a = UINT64_MAX - 4095; /* aligned, but the extent wraps */
    expect_reject(&e, &d, BC_ERR_SIZE_OVERFLOW, "a");
    d = base_desc(&e, 64, 64, 64), d.config = "no_such_config";
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "config");
    d = base_desc(&e, 64, 64, 64), d.config = "sm100_128x256x64_ws_s4_tmem2"; /* not for sm_90 */
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "config");

    /* the rules accept what they should: odd N with a packed D, padded A */
    d = base_desc(&e, 7, 9, 16);
    assert_ok(bc_gemm_plan_create(e.dev, &d, &plan));
    bc_gemm_plan_destroy(plan);
    d = base_desc(&e, 64, 64, 64), d.lda = 72, d.ldd = 65;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &plan));
    bc_gemm_plan_destroy(plan);
    env_close(&e);
}

static void test_no_kernel_for_device(void **state)
{
    env e;
    env_open(&e, 0); /* kernels not loaded */
    bc_gemm_desc d = base_desc(&e, 64, 64, 64);
    expect_reject(&e, &d, BC_ERR_NO_KERNEL_FOR_DEVICE, "config");
    env_close(&e);

    fake_device dv;
    fake_device_defaults(&dv);
    dv.cc_major = 8, dv.cc_minor = 0; /* Ampere: no GEMM configuration */
    fake_set_devices(&dv, 1);
    env_open(&e, 0);
    d = base_desc(&e, 64, 64, 64);
    expect_reject(&e, &d, BC_ERR_NO_KERNEL_FOR_DEVICE, "config");
    env_close(&e);

    /* too little shared memory for the tile: refused at open, not at launch */
    fake_device_defaults(&dv);
    dv.smem_optin = 100 * 1024;
    fake_set_devices(&dv, 1);
    bc_device_config cfg = ft_config();
    cfg.skip_kernel_load = 0;
    bc_device *dev = NULL;
    assert_status(bc_device_open(&cfg, &dev), BC_ERR_MODULE_LOAD);
    assert_null(dev);
}

static void test_packed_launch_sm90(void **state)
{
    env e;
    env_open(&e, 1);
    const fake_launch *l = NULL;

    /* 4096^3 bf16 -> bf16: the 128x256 configuration, 32 x 16 tiles,
     * persistent grid of 132 CTAs, D leaves by TMA store (box 64 x 64) */
    bc_gemm_desc d = base_desc(&e, 4096, 4096, 4096);
    bc_gemm_params p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x256");
    assert_int_equal(l->grid[0], 132);
    assert_int_equal(l->grid[1], 1);
    assert_int_equal(l->block[0], 384);
    assert_int_equal(l->smem, BC_SM90_SMEM_OF(BC_SM90_CFG_128X256));
    assert_int_equal(l->cluster[0], 1);
    assert_int_equal(p.m, 4096), assert_int_equal(p.n, 4096), assert_int_equal(p.k, 4096);
    assert_int_equal(p.tiles_m, 32), assert_int_equal(p.tiles_n, 16), assert_int_equal(p.k_blocks, 64);
    assert_int_equal(p.group_m, 8);
    assert_int_equal(p.ldd, 4096);
    assert_int_equal(p.flags, BC_GEMM_F_TMA_STORE);
    assert_int_equal(p.ab_type, BC_DTYPE_BF16), assert_int_equal(p.d_type, BC_DTYPE_BF16);
    assert_int_equal(p.d, e.d), assert_int_equal(p.c, 0), assert_int_equal(p.bias, 0);
    assert_int_equal(p.split_k, 1);
    /* programmatic serialization: the kernel's set-up overlaps the previous kernel */
    assert_int_equal(l->num_attrs, 1);
    assert_int_equal(attr_value(l, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION), 1);
    assert_true(p.alpha == 1.0f && p.beta == 0.0f);
    check_map(p.tmap_a, e.a, 4096, 4096, 8192, 64, 128, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
    check_map(p.tmap_b, e.b, 4096, 4096, 8192, 64, 256, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
    check_map(p.tmap_d, e.d, 4096, 4096, 8192, 64, 64, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);

    /* ragged, fp16 in, fp32 out, the whole epilogue (C: no TMA store),
     * padded leading dims, on the 64x32 configuration: 3 x 9 tiles */
    d = base_desc(&e, 129, 257, 136);
    d.config = "sm90_64x32";
    d.ab_type = BC_DTYPE_F16, d.d_type = BC_DTYPE_F32;
    d.alpha = 0.5f, d.beta = -2.0f, d.c = e.c, d.bias = e.bias, d.relu = 1;
    d.lda = 144, d.ldb = 152, d.ldc = 300, d.ldd = 260;
    p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x32");
    assert_int_equal(l->block[0], 256);
    assert_int_equal(l->smem, BC_SM90_SMEM_OF(BC_SM90_CFG_64X32));
    assert_int_equal(l->grid[0], 27), assert_int_equal(l->num_attrs, 1);
    assert_int_equal(p.ab_type, BC_DTYPE_F16), assert_int_equal(p.d_type, BC_DTYPE_F32);
    assert_int_equal(p.tiles_m, 3), assert_int_equal(p.tiles_n, 9), assert_int_equal(p.k_blocks, 3);
    assert_int_equal(p.split_k, 1);
    /* C rows of 1200 B (a 16-byte multiple): C through the ring by TMA; D rows of 1040 B, but N's 1028 B
     * end inside a 16-byte piece, which a TMA store would write whole (over D's padding): the copy-out path */
    assert_int_equal(p.flags, BC_GEMM_F_C | BC_GEMM_F_BIAS | BC_GEMM_F_RELU | BC_GEMM_F_C_SMEM);
    assert_int_equal(p.c, e.c), assert_int_equal(p.bias, e.bias);
    assert_int_equal(p.ldc, 300), assert_int_equal(p.ldd, 260);
    assert_true(p.alpha == 0.5f && p.beta == -2.0f);
    check_map(p.tmap_a, e.a, 136, 129, 288, 64, 64, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
    check_map(p.tmap_b, e.b, 136, 257, 304, 64, 32, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
    check_map(p.tmap_c, e.c, 257, 129, 1200, 32, 64, CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
    /* N = 256 (1024 B, 8 tiles a row) on the same pitches: D by TMA store */
    d.n = 256;
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.flags, BC_GEMM_F_C | BC_GEMM_F_BIAS | BC_GEMM_F_RELU | BC_GEMM_F_C_SMEM | BC_GEMM_F_TMA_STORE);
    check_map(p.tmap_c, e.c, 256, 129, 1200, 32, 64, CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
    check_map(p.tmap_d, e.d, 256, 129, 1040, 32, 64, CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
    /* 16-bit D: N = 252 (504 B) copies out, N = 248 (496 B) stores by TMA */
    d.d_type = BC_DTYPE_BF16, d.ldd = 264, d.ldc = 264, d.n = 252;
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.flags & BC_GEMM_F_TMA_STORE, 0);
    d.n = 248;
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.flags & BC_GEMM_F_TMA_STORE, BC_GEMM_F_TMA_STORE);
    d.d_type = BC_DTYPE_F32, d.ldc = 300, d.ldd = 260, d.n = 257;
    /* C rows that are not 16-byte multiples: the epilogue reads C itself and stores D by thread */
    d.ldc = 301;
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.flags, BC_GEMM_F_C | BC_GEMM_F_BIAS | BC_GEMM_F_RELU);
    /* C through the ring, D rows not 16-byte multiples: the copy-out path */
    d.ldc = 300, d.ldd = 259;
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.flags, BC_GEMM_F_C | BC_GEMM_F_BIAS | BC_GEMM_F_RELU | BC_GEMM_F_C_SMEM);
    d.ldd = 260;

    /* the same without C: N = 257 copies out; N = 256, f32 D by TMA store, 32 columns (128 B) a box */
    d.beta = 0.0f, d.c = 0;
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.flags, BC_GEMM_F_BIAS | BC_GEMM_F_RELU);
    d.n = 256;
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.flags, BC_GEMM_F_BIAS | BC_GEMM_F_RELU | BC_GEMM_F_TMA_STORE);
    check_map(p.tmap_d, e.d, 256, 129, 1040, 32, 64, CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
    d.n = 257;
    /* a D row pitch that is not a 16-byte multiple: the copy-out path */
    d.ldd = 259;
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.flags, BC_GEMM_F_BIAS | BC_GEMM_F_RELU);
    /* bf16 D rows of 64 B: 64-byte swizzle */
    d = base_desc(&e, 16, 4096, 4096);
    d.config = "sm90_64x32";
    p = launch_and_decode(&e, &d, &l);
    check_map_sw(p.tmap_d, e.d, 4096, 16, 8192, 32, 64, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, CU_TENSOR_MAP_SWIZZLE_64B);

    /* split-K over a cluster: one cluster of S CTAs per tile, S from the rule
     * or from split_k (the largest power of two <= min(split_k, 8, k-blocks)),
     * never a TMA store, no workspace, no cooperative launch */
    d = base_desc(&e, 300, 520, 264); /* 3 x 3 tiles of 128x256, 5 k-blocks */
    d.config = "sm90_128x256s";
    d.split_k = 4;
    p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x256s");
    assert_int_equal(p.tiles_m, 3), assert_int_equal(p.tiles_n, 3), assert_int_equal(p.k_blocks, 5);
    assert_int_equal(p.split_k, 4);
    assert_int_equal(l->grid[0], 36);
    assert_int_equal(l->num_attrs, 2);
    assert_int_equal(attr_value(l, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION), 4);
    assert_int_equal(attr_value(l, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION), 1);
    assert_int_equal(l->cluster[0], 4), assert_int_equal(l->cluster[1], 1), assert_int_equal(l->cluster[2], 1);
    assert_int_equal(p.flags, 0);
    d.split_k = 7; /* -> 4 */
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.split_k, 4), assert_int_equal(l->cluster[0], 4);
    d.split_k = 16; /* -> at most 8, but only 5 k-blocks: 4 */
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.split_k, 4);
    d = base_desc(&e, 128, 128, 2048); /* 32 k-blocks, 8 ways */
    d.config = "sm90_128x128s", d.split_k = 8;
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.split_k, 8), assert_int_equal(l->grid[0], 8), assert_int_equal(l->cluster[0], 8);
    d.split_k = 1; /* a split-K configuration cannot run whole */
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "split_k");
    d.config = "sm90_128x256", d.split_k = 2; /* nor a whole-tile one split */
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "split_k");
    d.config = NULL, d.split_k = 2; /* the rule among the split-K configurations */
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.split_k, 2);
    assert_int_equal(l->kernel[strlen(l->kernel) - 1], 's'); /* bc_gemm_sm90_*s */
    d.split_k = 1; /* the rule among the whole-tile ones */
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.split_k, 1), assert_int_equal(l->num_attrs, 1);
    d = base_desc(&e, 128, 128, 64); /* one k-block: a split request runs whole */
    d.split_k = 4;
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.split_k, 1);
    d.config = "sm90_128x256"; /* ... named too: at one k-block S >= 2 is one piece (gemm.h) */
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.split_k, 1);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x256");
    d.config = "sm90_128x256s", d.split_k = 0; /* a named split-K one at one k-block: nothing to split */
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "config");
    bc_error_detail det;
    bc_last_error(&det);
    assert_non_null(strstr(det.message, "sm90_128x256s splits K into pieces of 64-element k-blocks; K=64 is one: nothing to split"));
    d.split_k = 4;
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "config");

    env_close(&e);
}

/* Short packed rows of A: a short-K twin's dense-row kernel copies A as it
 * lies in memory (BC_GEMM_F_DENSE_A) when K is one partial k-block of whole
 * 16-byte chunks, A's rows are packed (ld = K), at least 32 CTAs share
 * A's rows at once and the L2 requests they save, CTAs x (a box's row
 * requests, two for a row across a line - its lines), are at least 1500
 * (and, for 128x64t, more than half of them: 55%); never another
 * configuration, a K of 64 or more, or rows with a gap. */
static void test_dense_rows(void **state)
{
    env e;
    env_open(&e, 1);
    const fake_launch *l = NULL;
    const uint32_t dense = BC_GEMM_F_DENSE_A;
    /* 1 x 280 tiles, all at once: A's 40 rows (8 a line) shared by 280 CTAs */
    bc_gemm_desc d = base_desc(&e, 40, 8958, 8);
    bc_gemm_params p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x32td");
    assert_int_equal(p.flags, BC_GEMM_F_DENSE_A); /* D's rows are not 16-byte multiples: no TMA store */
    assert_int_equal(p.a, e.a), assert_int_equal(p.b, e.b), assert_int_equal(p.k, 8);
    assert_int_equal(l->smem, BC_SM90_SMEM_OF(BC_SM90_CFG_64X32T));
    bc_gemm_plan *plan = NULL;
    bc_gemm_plan_info info;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &plan));
    assert_ok(bc_gemm_plan_query(plan, &info));
    assert_string_equal(info.config, "sm90_64x32t");
    assert_string_equal(info.kernel, "bc_gemm_sm90_64x32td");
    bc_gemm_plan_destroy(plan);
    d.lda = 16; /* A's rows with a gap: its tensor map, the twin's own kernel */
    p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x32t");
    assert_int_equal(p.flags & dense, 0);
    d.lda = 8, d.ldb = 16; /* B's layout does not matter */
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.flags & dense, dense);
    /* 280 CTAs x (40 requests - 10, 15 (rows of 48 B: a quarter cross a line: 50 requests), 20, 35 lines) */
    const int64_t ks[] = {16, 24, 32, 56};
    for (int i = 0; i < 4; i++) {
        d = base_desc(&e, 40, 8958, ks[i]);
        p = launch_and_decode(&e, &d, &l);
        assert_int_equal(p.flags & dense, dense);
    }
    d = base_desc(&e, 40, 8958, 64); /* a whole k-block: the tensor maps */
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.flags & dense, 0);
    d = base_desc(&e, 40, 8958, 8); /* a configuration without a dense-row kernel */
    d.config = "sm90_64x32";
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.flags & dense, 0);
    d.config = "sm90_128x64t"; /* 140 tiles at once on A's row */
    p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x64td");
    assert_int_equal(p.flags & dense, dense);
    /* 32 x 63 tiles of 128x64t, 264 CTAs over bands of 8 rows: 33 at once on a row, x (128 - 16) */
    d = base_desc(&e, 4000, 4000, 8);
    p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x64td");
    assert_int_equal(p.flags & dense, dense);
    d = base_desc(&e, 640, 9825, 32); /* 128x64t saving only half its requests (rows of 64 B, two a line) */
    p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x64t");
    assert_int_equal(p.flags & dense, 0);
    d = base_desc(&e, 300, 20000, 40); /* ... but 58% of them at rows of 80 B */
    p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_128x64td");
    d = base_desc(&e, 1000, 1000, 8); /* 8 x 16 tiles: 16 at once on a row, fewer than 32 */
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.flags & dense, 0);
    d = base_desc(&e, 7, 1750, 32); /* 55 tiles x (7 - 4); named (the rule takes the GEMV kernel) */
    d.config = "sm90_64x32m16t";
    p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x32m16t");
    assert_int_equal(p.flags & dense, 0);
    d = base_desc(&e, 16, 8000, 24); /* the skinny twin: 250 tiles x (20 - 6) */
    d.config = "sm90_64x32m16t";
    p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm90_64x32m16td");
    assert_int_equal(p.flags & dense, dense);
    d = base_desc(&e, 1, 14309, 8); /* one row of A: nothing shares its line */
    d.config = "sm90_64x32m16t";
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.flags & dense, 0);
    d = base_desc(&e, 5000, 1, 16); /* N = 1 transposed (a resident plan): the kernel's A is the caller's B */
    d.resident = 1;
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.m, 1), assert_int_equal(p.n, 5000);
    assert_int_equal(p.flags & dense, 0);
    env_close(&e);
}

/* The configuration rule (README): the least waves x tile area / weight on
 * 132 SMs; and an explicit choice. */
static void test_packed_launch_sm100(void **state)
{
    fake_device dv;
    fake_device_defaults(&dv);
    dv.cc_major = 10, dv.cc_minor = 0, dv.sm_count = 148;
    fake_set_devices(&dv, 1);
    env e;
    env_open(&e, 1);
    bc_device_info info;
    assert_ok(bc_device_query(e.dev, &info));
    assert_string_equal(info.image_arch, "sm_100a");
    const fake_launch *l = NULL;
    bc_gemm_desc d = base_desc(&e, 8192, 8192, 8192);
    bc_gemm_params p = launch_and_decode(&e, &d, &l);
    assert_string_equal(l->kernel, "bc_gemm_sm100_bf16_bf16");
    assert_int_equal(l->grid[0], 148);
    assert_int_equal(l->block[0], BC_SM100_THREADS);
    assert_int_equal(l->smem, BC_SM100_SMEM_BYTES);
    assert_int_equal(l->cluster[0], 1);
    assert_int_equal(p.tiles_m, 64), assert_int_equal(p.tiles_n, 32), assert_int_equal(p.k_blocks, 128);
    check_map(p.tmap_b, e.b, 8192, 8192, 16384, 64, 256, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
    env_close(&e);
}

/* The Blackwell kernel allocates all 512 TMEM columns and ~193 KiB of
 * shared memory: the plan takes it on devices where both are documented
 * (TMEM: no driver attribute; shared memory: the opt-in attribute) and
 * refuses it, naming the resource, elsewhere. */
static void plan_on(int major, int minor, int smem_optin, int with_kernels, const char *image, bc_status want,
                    const char *why)
{
    fake_device dv;
    fake_device_defaults(&dv);
    dv.cc_major = major, dv.cc_minor = minor, dv.sm_count = 20;
    if (smem_optin)
        dv.smem_optin = smem_optin;
    fake_set_devices(&dv, 1);
    env e;
    env_open(&e, with_kernels);
    bc_device_info info;
    assert_ok(bc_device_query(e.dev, &info));
    if (image)
        assert_string_equal(info.image_arch, image);
    bc_gemm_desc d = base_desc(&e, 300, 700, 200);
    if (want == BC_OK) {
        bc_gemm_plan *plan = NULL;
        assert_ok(bc_gemm_plan_create(e.dev, &d, &plan));
        bc_gemm_plan_info pi;
        assert_ok(bc_gemm_plan_query(plan, &pi));
        assert_string_equal(pi.kernel, "bc_gemm_sm100_bf16_bf16");
        bc_gemm_plan_destroy(plan);
    } else {
        expect_reject(&e, &d, want, "config");
        bc_error_detail det;
        bc_last_error(&det);
        if (strstr(det.message, why) == NULL)
            fail_msg("refused with \"%s\", expected it to name \"%s\"", det.message, why);
    }
    env_close(&e);
}

static void test_blackwell_capacity(void **state)
{
    plan_on(11, 0, 0, 1, "sm_110a", BC_OK, NULL);  /* Jetson Thor (CUDA 13 numbering) */
    plan_on(10, 3, 0, 1, "sm_103a", BC_OK, NULL);  /* B300 */
    plan_on(10, 1, 0, 1, "sm_100f", BC_OK, NULL);  /* Thor as CUDA 12.x numbers it */
    /* a 10.x part that runs the sm_100f image but whose TMEM nobody documents */
    plan_on(10, 2, 0, 1, "sm_100f", BC_ERR_NO_KERNEL_FOR_DEVICE, "tensor-memory columns");
    /* too little opt-in shared memory: the plan refuses it (with its
     * kernels loaded the device refuses it earlier, at open, when the
     * loader sets the kernels' limit: test_no_kernel_for_device) */
    plan_on(11, 0, 160 * 1024, 0, NULL, BC_ERR_NO_KERNEL_FOR_DEVICE, "bytes of shared memory");
}

/* The launch path: one driver call, no heap allocation, no validation work. */
static void test_launch_is_one_call_no_alloc(void **state)
{
    env e;
    env_open(&e, 1);
    bc_gemm_desc d = base_desc(&e, 1000, 1000, 1000);
    bc_gemm_plan *plan = NULL;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &plan));
    for (int i = 0; i < 100; i++) {
        uint64_t calls = fake_calls();
        counting = 1;
        bc_status st = bc_gemm_launch(plan, e.s);
        counting = 0;
        assert_ok(st);
        assert_int_equal(fake_calls() - calls, 1);
        assert_string_equal(fake_entry_name((fake_entry)fake_call_entry(fake_calls())), "cuLaunchKernelEx");
    }
    assert_int_equal(heap_calls, 0);

    const bc_gemm_plan *plans[1] = {plan};
    bc_graph *g = NULL;
    assert_ok(bc_graph_create(e.s, plans, 1, &g));
    for (int i = 0; i < 100; i++) {
        uint64_t calls = fake_calls();
        counting = 1;
        bc_status st = bc_graph_launch(g, e.s);
        counting = 0;
        assert_ok(st);
        assert_int_equal(fake_calls() - calls, 1);
        assert_string_equal(fake_entry_name((fake_entry)fake_call_entry(fake_calls())), "cuGraphLaunch");
    }
    assert_int_equal(heap_calls, 0);
    bc_graph_destroy(g);
    bc_gemm_plan_destroy(plan);
    env_close(&e);
}

/* Re-pointing: the maps follow, a bad pointer leaves the plan unchanged, and
 * a graph is patched in place with one driver call. */
static void test_set_pointers_and_graph_update(void **state)
{
    env e;
    env_open(&e, 1);
    bc_gemm_desc d = base_desc(&e, 256, 512, 128);
    bc_gemm_plan *plan = NULL;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &plan));
    const bc_gemm_plan *plans[1] = {plan};
    bc_graph *g = NULL;
    assert_ok(bc_graph_create(e.s, plans, 1, &g));

    assert_status(bc_gemm_plan_set_pointers(plan, e.a + 8, e.b, 0, e.d, 0), BC_ERR_MISALIGNED);
    assert_status(bc_gemm_plan_set_pointers(plan, e.a, e.b, 0, e.d, e.bias), BC_ERR_INVALID_ARGUMENT);
    const fake_launch *l = NULL;
    assert_ok(bc_gemm_launch(plan, e.s));
    l = fake_last_launch();
    bc_gemm_params p;
    memcpy(&p, l->params, sizeof p);
    assert_int_equal(p.tmap_a[0], e.a); /* unchanged by the failed calls */

    uint64_t replaces = fake_tensor_map_replaces();
    assert_ok(bc_gemm_plan_set_pointers(plan, e.c, e.a, 0, e.b, 0));
    assert_int_equal(fake_tensor_map_replaces() - replaces, 3); /* A, B and D (TMA-store epilogue) */
    assert_ok(bc_gemm_launch(plan, e.s));
    memcpy(&p, fake_last_launch()->params, sizeof p);
    assert_int_equal(p.tmap_a[0], e.c);
    assert_int_equal(p.tmap_b[0], e.a);
    assert_int_equal(p.tmap_d[0], e.b);
    assert_int_equal(p.d, e.b);

    uint64_t calls = fake_calls();
    counting = 1;
    assert_ok(bc_graph_update(g, 0, plan));
    counting = 0;
    assert_int_equal(heap_calls, 0);
    assert_int_equal(fake_calls() - calls, 1);
    assert_string_equal(fake_entry_name((fake_entry)fake_call_entry(fake_calls())), "cuGraphExecKernelNodeSetParams");
    assert_status(bc_graph_update(g, 1, plan), BC_ERR_INVALID_ARGUMENT);
    bc_graph_destroy(g);
    bc_gemm_plan_destroy(plan);
    env_close(&e);
}

/* Forgotten plans and graphs are released by bc_device_close. */
static void test_close_releases_plans_and_graphs(void **state)
{
    env e;
    env_open(&e, 1);
    bc_gemm_desc d = base_desc(&e, 128, 128, 64);
    bc_gemm_plan *p1 = NULL, *p2 = NULL;
    assert_ok(bc_gemm_plan_create(e.dev, &d, &p1));
    assert_ok(bc_gemm_plan_create(e.dev, &d, &p2));
    const bc_gemm_plan *plans[2] = {p1, p2};
    bc_graph *g = NULL;
    assert_ok(bc_graph_create(e.s, plans, 2, &g));
    env_close(&e); /* the teardown checks that no driver object is left */
}

/* Each tensor-map rule, checked on the host, names itself. */
static void test_tensor_map_rules(void **state)
{
    env e;
    env_open(&e, 0);
    uint64_t map[16];
    struct {
        uint64_t base, cols, rows, row_bytes;
        uint32_t bc, br, sw;
        const char *rule;
    } cases[] = {
        {0x1008, 64, 64, 128, 64, 64, 128, "globalAddress"},
        {0x1000, 0, 64, 128, 64, 64, 128, "globalDim"},
        {0x1000, 64, (1ull << 32) + 1, 128, 64, 64, 128, "globalDim"},
        {0x1000, 64, 64, 120, 64, 64, 128, "globalStrides"},
        {0x1000, 64, 64, 1ull << 40, 64, 64, 128, "globalStrides"},
        {0x1000, 64, 64, 64, 64, 64, 128, "globalStrides"}, /* stride shorter than a row */
        {0x1000, 64, 64, 128, 0, 64, 128, "boxDim"},
        {0x1000, 64, 64, 128, 64, 257, 128, "boxDim"},
        {0x1000, 64, 64, 128, 4, 64, 128, "boxDim"},    /* 8 inner bytes */
        {0x1000, 128, 64, 256, 128, 64, 128, "swizzle"}, /* 256 inner bytes > 128 */
        {0x1000, 64, 64, 128, 64, 64, 64, "swizzle"},    /* 128 inner bytes > 64 */
        {0x1000, 64, 64, 128, 16, 64, 32, "swizzle"},    /* a span we never use */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bc__tmap_desc t = {"T", BC_DTYPE_BF16, cases[i].base, cases[i].cols, cases[i].rows,
                                 cases[i].row_bytes, cases[i].bc, cases[i].br, cases[i].sw};
        assert_status(bc__tmap_encode(map, &t), BC_ERR_TENSOR_MAP);
        bc_error_detail det;
        bc_last_error(&det);
        assert_string_equal(det.call, cases[i].rule);
    }
    const bc__tmap_desc ok128 = {"T", BC_DTYPE_BF16, 0x1000, 64, 64, 128, 64, 64, 128};
    assert_ok(bc__tmap_encode(map, &ok128));
    const bc__tmap_desc ok64 = {"T", BC_DTYPE_F32, 0x1000, 16, 64, 64, 16, 64, 64};
    assert_ok(bc__tmap_encode(map, &ok64));
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_validation_rules),
        ft_test(test_no_kernel_for_device),
        ft_test(test_packed_launch_sm90),
        ft_test(test_dense_rows),
        ft_test(test_packed_launch_sm100),
        ft_test(test_blackwell_capacity),
        ft_test(test_launch_is_one_call_no_alloc),
        ft_test(test_set_pointers_and_graph_update),
        ft_test(test_close_releases_plans_and_graphs),
        ft_test(test_tensor_map_rules),
    };
    return cmocka_run_group_tests_name("gemm_plan", tests, NULL, NULL);
}
