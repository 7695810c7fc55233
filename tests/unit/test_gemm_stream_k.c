/* Stream-K on the fake driver (an H100-like device, 132 SMs): the walk of
 * kernels_ptx/sk_sched.h over many tile, k-block and CTA counts, and the
 * plans that take their last partial round by stream-K (desc.stream_k). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gemm_plan_env.h"
#include "sk_sched.h"

/* The stream-K walk (kernels_ptx/sk_sched.h) over many tile, k-block and
 * CTA counts: every unit of every tile is taken by exactly one CTA, in K
 * order within a tile; a tile's pieces are its covering CTAs in order,
 * 0 .. pieces - 1; a whole tile has one piece; and the slots of the pieces
 * of split tiles are distinct and below BC_SK_SLOTS(ctas). */
static void test_sk_schedule(void **state)
{
    (void)state;
    static const uint32_t tiles_v[] = {1, 2, 3, 7, 22, 74, 131};
    static const uint32_t kb_v[] = {2, 3, 5, 10, 64, 161};
    static uint8_t seen[131 * 161];
    static uint8_t slot_used[2 * 132];
    static uint32_t owner[131 * 161];
    for (size_t ti = 0; ti < sizeof tiles_v / sizeof tiles_v[0]; ti++)
        for (size_t ki = 0; ki < sizeof kb_v / sizeof kb_v[0]; ki++)
            for (uint32_t ctas = 1; ctas <= 132; ctas++) {
                const bc_sk sk = {5, tiles_v[ti], ctas, kb_v[ki]};
                const uint64_t units = (uint64_t)sk.tiles * sk.kb;
                if (ctas > units)
                    continue;
                memset(seen, 0, sizeof seen);
                memset(slot_used, 0, sizeof slot_used);
                for (uint32_t g = 0; g < ctas; g++) {
                    assert_true(bc_sk_lo(&sk, g) < bc_sk_lo(&sk, g + 1u)); /* never an empty range */
                    for (uint64_t u = bc_sk_lo(&sk, g), end = bc_sk_lo(&sk, g + 1u); u < end;) {
                        const uint64_t at = u;
                        const bc_sk_piece p = bc_sk_piece_at(&sk, g, u, &u);
                        assert_true(u > at && u <= end);
                        assert_int_equal((uint64_t)p.tile * sk.kb + p.kb0, at);
                        assert_int_equal(p.kb1 - p.kb0, u - at);
                        assert_true(p.kb1 <= sk.kb && p.piece < p.pieces);
                        if (p.pieces == 1)
                            assert_true(p.kb0 == 0 && p.kb1 == sk.kb);
                        else {
                            const uint32_t slot = bc_sk_slot(&sk, p.tile, p.piece);
                            assert_true(slot < BC_SK_SLOTS(ctas));
                            assert_int_equal(slot_used[slot], 0);
                            slot_used[slot] = 1;
                        }
                        for (uint32_t k = p.kb0; k < p.kb1; k++)
                            owner[p.tile * sk.kb + k] = g;
                        /* the tile's first unit is taken by then (CTAs walk in order): its piece and count */
                        assert_int_equal(p.piece, g - owner[p.tile * sk.kb]);
                        assert_int_equal(p.pieces,
                                         bc_sk_cta_of(&sk, (uint64_t)p.tile * sk.kb + sk.kb - 1u) -
                                             owner[p.tile * sk.kb] + 1u);
                        for (uint32_t k = p.kb0; k < p.kb1; k++) {
                            assert_int_equal(seen[p.tile * sk.kb + k], 0);
                            seen[p.tile * sk.kb + k] = 1;
                            owner[p.tile * sk.kb + k] = g;
                            assert_int_equal(bc_sk_cta_of(&sk, (uint64_t)p.tile * sk.kb + k), g);
                        }
                    }
                }
                for (uint32_t j = 0; j < sk.tiles; j++) {
                    const uint32_t g0 = owner[j * sk.kb], g1 = owner[j * sk.kb + sk.kb - 1u];
                    for (uint32_t k = 0; k < sk.kb; k++) {
                        assert_int_equal(seen[j * sk.kb + k], 1);
                        assert_true(owner[j * sk.kb + k] >= g0 && owner[j * sk.kb + k] <= g1);
                    }
                }
            }
}

/* Stream-K plans (desc.stream_k = 1) on the fake H100 (132 SMs): which
 * plans take it, their parameters and grid, the workspace in the device
 * arena (given back at destroy), C read by the threads, and the refusals. */
static void test_stream_k_plan(void **state)
{
    env e;
    env_open(&e, 1); /* without the stream-K group: refused where the configuration has a stream-K twin */
    bc_gemm_desc r = base_desc(&e, 1722, 1400, 5120);
    r.config = "sm90_128x128", r.stream_k = 1;
    expect_reject(&e, &r, BC_ERR_NO_KERNEL_FOR_DEVICE, "stream_k");
    r.config = "sm90_128x256"; /* none: whole tiles, as without stream_k */
    assert_int_equal(plan_info(&e, &r).stream_k_tiles, 0);
    env_close(&e);
    env_groups = BC_KERNELS_STREAM_K;
    env_open(&e, 1);
    env_groups = 0;
    bc_pool_stats before, after;
    const fake_launch *l;
    /* 1722 x 1400 on 128x128: 14 x 11 = 154 tiles, one round and 22 tiles of 80 k-blocks: 1760 units over
     * 44 CTAs (two a tile at most) of 40 (after a full round, 40 + 28 within 85% of 80) */
    bc_gemm_desc d = base_desc(&e, 1722, 1400, 5120);
    d.config = "sm90_128x128";
    d.stream_k = 1;
    d.beta = 1.0f, d.c = e.c;
    assert_ok(bc_pool_get_stats(e.dev, BC_POOL_DEVICE, &before));
    bc_gemm_params p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.sk_first, 132);
    assert_int_equal(p.sk_tiles, 22);
    assert_int_equal(p.sk_ctas, 44);
    assert_true(p.sk_ws != 0);
    assert_int_equal(l->grid[0], 132);
    assert_int_equal(p.flags & BC_GEMM_F_C_SMEM, 0); /* C through the threads */
    assert_true(p.flags & BC_GEMM_F_C);
    assert_ok(bc_pool_get_stats(e.dev, BC_POOL_DEVICE, &after));
    assert_int_equal(after.bytes_in_use, before.bytes_in_use); /* destroyed: the workspace is back */
    bc_gemm_plan_info in = plan_info(&e, &d);
    assert_int_equal(in.stream_k_tiles, 22);
    assert_int_equal(in.stream_k_ctas, 44);
    assert_int_equal(in.workspace_bytes, 2u * 44u * 128u * 128u * 4u + 22u * 2u * 4u);
    assert_int_equal(in.grid_x, 132);
    assert_string_equal(in.kernel, "bc_gemm_sm90_128x128k");
    /* without stream_k: whole tiles, the ring's C, no workspace */
    d.stream_k = 0;
    p = launch_and_decode(&e, &d, &l);
    assert_int_equal(p.sk_ctas, 0);
    assert_true(p.flags & BC_GEMM_F_C_SMEM);
    in = plan_info(&e, &d);
    assert_int_equal(in.stream_k_tiles, 0);
    assert_int_equal(in.workspace_bytes, 0);
    assert_string_equal(in.kernel, "bc_gemm_sm90_128x128");
    /* the rule's own configuration, then stream-K: 205 x 4640 x 10272 on 128x128, 74 tiles (less than a
     * round) of 161 k-blocks over 132 CTAs (91 + 28 < 161); stream-K never changes the configuration
     * (1725 x 1344 x 6976 stays on 128x256, which has none) */
    d = base_desc(&e, 205, 4640, 10272);
    d.stream_k = 1;
    in = plan_info(&e, &d);
    assert_string_equal(in.config, "sm90_128x128");
    assert_int_equal(in.stream_k_tiles, 74);
    assert_int_equal(in.stream_k_ctas, 132);
    d = base_desc(&e, 1725, 1344, 6976);
    d.stream_k = 1;
    in = plan_info(&e, &d);
    assert_string_equal(in.config, "sm90_128x256");
    assert_int_equal(in.stream_k_tiles, 0);
    /* not taken: full rounds (12 x 11 = 132 tiles); too few k-blocks to share (K = 256: 88 units, 22 CTAs
     * of 4, no more CTAs than tiles); the cost at its edges, after a full round (K = 5056, 79 k-blocks: 1738
     * units over 44 CTAs, 40 + 28 above 85% of 79; K = 5120, taken above) and in a single round (205 x
     * 4640: K = 4160, 65 k-blocks over 132 CTAs, 37 + 28 >= 65; K = 4224, 66: 37 + 28 < 66); a configuration
     * without a stream-K twin (128x256) */
    d = base_desc(&e, 1536, 1408, 4096);
    d.config = "sm90_128x128", d.stream_k = 1;
    assert_int_equal(plan_info(&e, &d).stream_k_tiles, 0);
    d.m = 1722, d.n = 1400, d.k = 256;
    assert_int_equal(plan_info(&e, &d).stream_k_tiles, 0);
    d.k = 5056;
    assert_int_equal(plan_info(&e, &d).stream_k_tiles, 0);
    d.m = 205, d.n = 4640, d.k = 4160;
    assert_int_equal(plan_info(&e, &d).stream_k_tiles, 0);
    d.k = 4224;
    assert_int_equal(plan_info(&e, &d).stream_k_tiles, 74);
    d.config = "sm90_128x256", d.m = 1722, d.n = 1400, d.k = 5120;
    assert_int_equal(plan_info(&e, &d).stream_k_tiles, 0);
    /* fewer k-blocks than a stream-K CTA takes (one tile of 2 and 3 k-blocks: no CTA at all) */
    d = base_desc(&e, 128, 128, 128);
    d.config = "sm90_128x128", d.stream_k = 1;
    assert_int_equal(plan_info(&e, &d).stream_k_tiles, 0);
    d.k = 192;
    assert_int_equal(plan_info(&e, &d).stream_k_tiles, 0);
    /* the CTAs are at most twice the tiles, so no tile is in more than three pieces (205 x 4640 x 10272:
     * 74 tiles over 132 CTAs) */
    d = base_desc(&e, 205, 4640, 10272);
    d.stream_k = 1;
    p = launch_and_decode(&e, &d, &l);
    assert_true(p.sk_ctas <= 2u * p.sk_tiles);
    const bc_sk sk = {p.sk_first, p.sk_tiles, p.sk_ctas, p.k_blocks};
    uint32_t most = 0;
    for (uint32_t j = 0; j < sk.tiles; j++) {
        const uint32_t n = bc_sk_cta_of(&sk, (uint64_t)j * sk.kb + sk.kb - 1u) - bc_sk_cta_of(&sk, (uint64_t)j * sk.kb) + 1u;
        most = n > most ? n : most;
    }
    assert_int_equal(most, 3);
    /* refused: a value other than 0 and 1; a workspace the arena cannot hold (nothing leaks) */
    d = base_desc(&e, 1722, 1400, 5120);
    d.config = "sm90_128x128", d.stream_k = 2;
    expect_reject(&e, &d, BC_ERR_INVALID_ARGUMENT, "stream_k");
    d.stream_k = 1;
    assert_ok(bc_pool_get_stats(e.dev, BC_POOL_DEVICE, &before));
    bc_devptr fill = 0;
    assert_ok(bc_mem_alloc(e.dev, before.largest_free_block - (1u << 20), &fill));
    expect_reject(&e, &d, BC_ERR_POOL_EXHAUSTED, "stream_k");
    assert_ok(bc_mem_free(e.dev, fill));
    assert_ok(bc_pool_get_stats(e.dev, BC_POOL_DEVICE, &after));
    assert_int_equal(after.bytes_in_use, before.bytes_in_use);
    /* a full block table with room to spare is reported as what it is, not as a workspace too large */
    enum { MOST = 100000 };
    bc_devptr *blocks = calloc(MOST, sizeof *blocks);
    assert_non_null(blocks);
    int nb = 0;
    bc_status full = BC_OK;
    while (nb < MOST && (full = bc_mem_alloc(e.dev, 256, &blocks[nb])) == BC_OK)
        nb++;
    assert_int_equal(full, BC_ERR_TOO_MANY_BLOCKS);
    expect_reject(&e, &d, BC_ERR_TOO_MANY_BLOCKS, "bc__tlsf_alloc");
    bc_error_detail det;
    bc_last_error(&det);
    assert_null(strstr(det.message, "does not fit"));
    for (int i = 0; i < nb; i++)
        assert_ok(bc_mem_free(e.dev, blocks[i]));
    free(blocks);
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_sk_schedule),
        ft_test(test_stream_k_plan),
    };
    return cmocka_run_group_tests_name("gemm_stream_k", tests, NULL, NULL);
}
