#!/usr/bin/env python3
"""Unit tests of the sweep tools that need no GPU: the Python generator
(tools/sweep.py), the rule fitter (tools/fit_rule.py) on synthetic timings
with hand-computed answers, and the sweep comparison (tools/sweep_compare.py)
on synthetic results, the README's sweep subsets (tools/sweep_subsets.py)
on a hand-made CSV, and the profile splitter (tools/device/ncu_regions.py)
on a hand-made source page. Run from anywhere: python3 tools/test_sweep_tools.py.
(tests/unit/test_cli_sweep.c runs it, and checks the generator and the rule
against the C side.)"""
import argparse
import contextlib
import csv
import io
import math
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fit_rule  # noqa: E402
import sweep  # noqa: E402
import sweep_compare  # noqa: E402
import sweep_subsets  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "device"))
import ncu_regions  # noqa: E402

PLAN_C = '''
#define BC_MAX_SPLIT_K 8u
#define BC_SPLIT_COST_KB 3u
static const bc__gemm_config sm90_configs[] = {
    BC__APPLY(SM90_CONFIG, "big", BC_K_BIG, 100, BC_SM90_CFG_BIG),
    BC__APPLY(SM90_CONFIG, "bigs", BC_K_BIGS, 100, BC_SM90_CFG_BIGS),
    BC__APPLY(SM90_CONFIG, "small", BC_K_SMALL, 50, BC_SM90_CFG_SMALL),
};
'''
ABI_H = '''
#define BC_SM90_BK 64
#define BC_SM90_CFG_BIG 2, 128, 4, 0, 128
#define BC_SM90_CFG_BIGS 2, 128, 4, 1, 128
#define BC_SM90_CFG_SMALL 1, 64, 8, 0, 64
'''


def synthetic_rule():
    d = tempfile.mkdtemp()
    plan, abi = os.path.join(d, "gemm_rule.c"), os.path.join(d, "gemm_abi.h")
    for path, text in ((plan, PLAN_C), (abi, ABI_H)):
        with open(path, "w") as f:
            f.write(text)
    return fit_rule.read_rule(plan, abi)


class Generator(unittest.TestCase):
    def test_logu_range_and_determinism(self):
        rng = sweep.SplitMix64(5)
        vals = [sweep.logu(rng, 8, 16384) for _ in range(2000)]
        self.assertTrue(all(8 <= v <= 16384 for v in vals))
        rng2 = sweep.SplitMix64(5)
        self.assertEqual(vals, [sweep.logu(rng2, 8, 16384) for _ in range(2000)])

    def test_splitmix_vector(self):
        self.assertEqual(sweep.SplitMix64(0).next(), 0xE220A8397B1DCDAF)

    def test_draw(self):
        items = sweep.draw(300, 9, 1 << 24, 0.5)
        self.assertEqual(items, sweep.draw(300, 9, 1 << 24, 0.5))
        for m, n, k, tag in items:
            self.assertTrue(1 <= m <= 16384 and 1 <= n <= 16384 and 8 <= k <= 16384 and k % 8 == 0)
            sb = sweep.set_bytes(m, n, k, tag)
            self.assertLessEqual(sb * sweep.bench_sets(sb), 1 << 24)
        self.assertEqual({t for *_, t in sweep.draw(50, 1, epi_fraction=0.0)}, {"plain"})

    def test_floor(self):
        fl, bound = sweep.floor_us(4096, 4096, 4096, "plain")
        self.assertAlmostEqual(fl, 171.80, places=2)
        self.assertEqual(bound, "compute")
        fl, bound = sweep.floor_us(16, 4096, 4096, "c")  # 33947648 B / 3.02e12
        self.assertAlmostEqual(fl, 11.2409, places=3)
        self.assertEqual(bound, "memory")

    def test_bad_arguments(self):
        for argv in (["--count", "0", "--seed", "1"], ["--count", "5"], ["--count", "5", "--seed", "1", "--mem-cap",
                                                                           "100"],
                     ["--count", "5", "--seed", "1", "--epilogue-fraction", "2"]):
            ap = argparse.ArgumentParser()
            sweep.add_arguments(ap)
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
                sweep.check_arguments(ap, ap.parse_args(argv))


class Rule(unittest.TestCase):
    def test_read(self):
        r = synthetic_rule()
        self.assertEqual([(c["name"], c["bm"], c["bn"], c["weight"], c["split"]) for c in r["configs"]],
                         [("sm90_big", 128, 128, 100, False), ("sm90_bigs", 128, 128, 100, True),
                          ("sm90_small", 64, 64, 50, False)])
        self.assertEqual((r["split_cost"], r["max_split"], r["bk"]), (3, 8, 64))
        real = fit_rule.read_rule()  # the compiled rule parses too
        self.assertTrue(real["configs"] and all(c["name"].startswith("sm90_") for c in real["configs"]))

    def test_choose_by_hand(self):
        r = synthetic_rule()
        # 128x128x64 on 4 SMs: big 1 CTA, 1 k-block: 128*128*1*100/100 = 16384; bigs has no split (1 k-block);
        # small 4 CTAs, one wave: 64*64*1*100/50 = 8192 -> small
        self.assertEqual(fit_rule.choose(128, 128, 64, 4, r), ("sm90_small", 1))
        # 128x128x4096 on 4 SMs (64 k-blocks): big 16384*64 = 1048576; bigs S=2: 1 wave, work 32+3 -> 573440,
        # S=4: 1 wave, 16+3 -> 311296, S=8: 2 waves, 8+3 -> 360448; small 8192*64 = 524288 -> bigs/4
        self.assertEqual(fit_rule.choose(128, 128, 4096, 4, r), ("sm90_bigs", 4))
        self.assertEqual(fit_rule.rule_cost(r["configs"][1], 8, 128, 128, 4096, 4, r), 360448)

    def test_pick_agrees_with_choose(self):
        """The fitting path (prepare + pick with the compiled rule's constants) picks what choose picks, the
        clusters-of-8 extra and the short-K twins included (M > 16 and N > 1: no transposition involved; min(M, N)
        past 32, a larger side past 4096 or K past 3072: the GEMV kernels do not take them)."""
        real = fit_rule.read_rule()
        shapes = [(64, 320, 1024), (100, 96, 6000), (17, 224, 4096), (40, 256, 4096), (100, 2890, 64),
                  (4000, 300, 128), (1000, 300, 64), (2048, 2048, 2048), (600, 294, 6576), (27, 17, 5192),
                  (17, 4100, 1024),
                  # 128x256's short-K surcharge (4 and 5 k-blocks) and its credit off the sectors on up to 16
                  # tile rows (16 and 17 rows)
                  (2642, 2648, 256), (2642, 2648, 320), (3544, 6196, 192), (2048, 2100, 5416),
                  (2049, 2100, 5416)]
        for m, n, k in shapes:
            times = {(c["name"], s): 1.0 for c, s in fit_rule.candidates(m, n, k, real, 132)}
            sh = {"m": m, "n": n, "k": k, "sms": 132, "epilogue": "plain", "out": "bf16", "times": times}
            p = fit_rule.prepare([sh], real)[0]
            c = fit_rule.pick(p, fit_rule.params_of(real))
            self.assertEqual((c["cfg"], c["s"]), fit_rule.choose(m, n, k, 132, real), f"{m}x{n}x{k}")

    def test_unaligned_alt_f32(self):
        """D rows off 16 bytes on 128x64t move to 128x128 from 31 rounds of its tiles for a 16-bit D and 10
        for an f32 one (gemm_rule.c, bc__gemm_unaligned_alt): 1280 x 8441 is 10 x 132 = 1320 tiles."""
        real = fit_rule.read_rule()
        alt = lambda m, n, f32, c_read=False: fit_rule.unaligned_alt(m, n, 132, real, "sm90_128x64t", 1, c_read, f32)
        self.assertEqual(alt(1280, 8441, True), "sm90_128x128")
        self.assertIsNone(alt(1280, 8379, True))   # 10 x 131 = 1310 tiles
        self.assertIsNone(alt(1280, 8444, True))   # f32 rows on 16 bytes
        self.assertEqual(alt(1280, 8442, True), "sm90_128x128")  # 8 bytes off
        self.assertIsNone(alt(1280, 8441, False))  # 16-bit D: 31 rounds
        self.assertIsNone(alt(1280, 8441, True, c_read=True))
        self.assertEqual(alt(3968, 8441, False), "sm90_128x128")  # 31 x 132 = 4092

    def test_aligned_alt(self):
        """D rows on 16 bytes on 128x64t move to 128x128 from 14 rounds of its tiles (1792 x 8448: 14 x 132 =
        1848), within 2 k-blocks, unless the plan takes the dense-row kernel (gemm_rule.c, bc__gemm_aligned_alt)."""
        real = fit_rule.read_rule()
        alt = lambda m, n, k, f32=False, c_read=False: fit_rule.aligned_alt(m, n, k, 132, real, "sm90_128x64t", 1,
                                                                           c_read, f32)
        self.assertEqual(alt(1792, 8448, 64), "sm90_128x128")
        self.assertEqual(alt(1792, 8448, 128), "sm90_128x128")
        self.assertEqual(alt(1792, 8448, 64, f32=True), "sm90_128x128")
        self.assertIsNone(alt(1792, 8384, 64))       # 14 x 131 = 1834 tiles
        self.assertIsNone(alt(1792, 8448, 192))      # 3 k-blocks
        self.assertIsNone(alt(1792, 8448, 16))       # the dense-row kernel
        self.assertIsNone(alt(1792, 8447, 64))       # D rows off 16 bytes: unaligned_alt's
        self.assertIsNone(alt(1792, 8448, 64, c_read=True))
        self.assertEqual(alt(1792, 8448, 56), "sm90_128x128")   # under the dense-row kernel's 55% saved
        self.assertEqual(alt(7680, 1984, 48), "sm90_128x128")   # 31 CTAs on a row: no dense-row kernel
        self.assertIsNone(alt(7680, 1984, 16))       # K under 48
        self.assertIsNone(alt(240000, 64, 64))       # one tile column

    def _csv(self, d, name, rows):
        path = os.path.join(d, name)
        keys = ["seed", "index", "m", "n", "k", "epilogue", "out", "config", "split", "status", "median_us",
                "sm_count"]
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            for r in rows:
                w.writerow(dict(zip(keys, r)))
        return path

    def test_load_and_evaluate_by_hand(self):
        r = synthetic_rule()
        d = tempfile.mkdtemp()
        # shape A (seed 1 #0) 128x128x64 on 4 SMs: the rule picks small (see above); big is faster: loss 2
        # shape B (seed 1 #1) 128x128x4096: the rule picks bigs/4; bigs/4 measured twice (4 and 8 asked -> 4):
        # geometric mean of 9 and 16 = 12; big 10 us is the fastest: loss 1.2
        paths = [self._csv(d, "a.csv", [
            (1, 0, 128, 128, 64, "plain", "bf16", "sm90_big", 1, "PASS", 5.0, 4),
            (1, 0, 128, 128, 64, "plain", "bf16", "sm90_small", 1, "PASS", 10.0, 4),
            (1, 0, 128, 128, 64, "plain", "bf16", "sm90_bigs", 2, "SKIP", "", 4),
            (1, 1, 128, 128, 4096, "c", "bf16", "sm90_big", 1, "PASS", 10.0, 4),
            (1, 1, 128, 128, 4096, "c", "bf16", "sm90_bigs", 4, "PASS", 9.0, 4),
            (1, 1, 128, 128, 4096, "c", "bf16", "sm90_bigs", 4, "PASS", 16.0, 4),
            (1, 1, 128, 128, 4096, "c", "bf16", "sm90_small", 1, "PASS", 30.0, 4)])]
        shapes = fit_rule.load(paths, 132)
        self.assertAlmostEqual(shapes[(1, 1)]["times"][("sm90_bigs", 4)], 12.0)
        self.assertNotIn(("sm90_bigs", 2), shapes[(1, 0)]["times"])
        prep = fit_rule.prepare(list(shapes.values()), r)
        ev = fit_rule.evaluate(prep, fit_rule.params_of(r))
        self.assertEqual((ev["n"], ev["hits"], ev["unmeasured"]), (2, 0, 0))
        self.assertAlmostEqual(ev["geo_loss"], math.sqrt(2.0 * 1.2))
        self.assertAlmostEqual(ev["worst"][0], 2.0)
        # small's weight 20 instead of 50: 64*64*1*100/20 = 20480 > 16384, A moves to big (loss 1)
        p = fit_rule.params_of(r)
        p["weights"]["sm90_small"] = 20
        self.assertEqual(fit_rule.pick(prep[0], p)["cfg"], "sm90_big")
        # a C-read term of 100 k-blocks: B's bigs/4 costs 16384*(16+3+100) = 1949696, big 16384*(64+100) =
        # 2686976, small (4 CTAs, one wave) 4096*(64+100)*100/20 = 3358720: still bigs/4
        p["c_kb"] = 100
        self.assertEqual((fit_rule.pick(prep[1], p)["cfg"], fit_rule.pick(prep[1], p)["s"]), ("sm90_bigs", 4))

    def test_fit_recovers_hidden_weights(self):
        # times drawn from the rule's own model with other weights: the fit must reach loss 1 on held-out shapes
        r = synthetic_rule()
        truth = fit_rule.params_of(r)
        truth["weights"] = {"sm90_big": 100, "sm90_bigs": 70, "sm90_small": 20}
        truth["split_cost"] = 10
        shapes = []
        for i, (m, n, k, _tag) in enumerate(sweep.draw(240, 77, 1 << 30, 0.0)):
            sh = {"seed": 1 + i % 2, "index": i, "m": m, "n": n, "k": k, "epilogue": "plain", "out": "bf16",
                  "sms": 8, "times": {}}
            for cfg, s in fit_rule.candidates(m, n, k, r, 8):
                cost = fit_rule.rule_cost(cfg, s, m, n, k, 8, {**r, "split_cost": truth["split_cost"]},
                                          weight=truth["weights"][cfg["name"]])
                sh["times"][(cfg["name"], s)] = 1.0 + cost * (1.0 + 1e-9 * (hash((i, cfg["name"], s)) % 7))
            shapes.append(sh)
        fit_set = fit_rule.prepare([s for s in shapes if s["seed"] == 1], r)
        check_set = fit_rule.prepare([s for s in shapes if s["seed"] == 2], r)
        start = fit_rule.params_of(r)
        before = fit_rule.evaluate(check_set, start)["geo_loss"]
        fitted = fit_rule.fit(fit_set, start, r, extra_terms=False, restarts=2)
        after = fit_rule.evaluate(check_set, fitted)["geo_loss"]
        self.assertGreater(before, 1.01)
        self.assertLess(after, 1.0 + (before - 1.0) * 0.2)

    def test_cli(self):
        d = tempfile.mkdtemp()
        rows = []
        for seed in (1, 2):
            for i, (m, n, k, tag) in enumerate(sweep.draw(20, seed, 1 << 26, 0.5)):
                for cfg in ("sm90_128x256", "sm90_128x128", "sm90_128x64", "sm90_64x32"):
                    rows.append((seed, i, m, n, k, tag, "bf16", cfg, 1, "PASS", 1.0 + (m * n * k) % 97, 132))
        path = self._csv(d, "c.csv", rows)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = fit_rule.main(["--fit-seeds", "1", "--check-seeds", "2", "--restarts", "0", path])
        self.assertEqual(rc, 0)
        text = out.getvalue()
        real = fit_rule.read_rule()  # the dot and GEMV kernels' shapes are taken outright: not in the fit
        tiles = [sum(1 for m, n, k, _ in sweep.draw(20, seed, 1 << 26, 0.5)
                     if not (fit_rule.dot_choice(m, n, k, 132, real) or fit_rule.gemv_choice(m, n, k, 132, real)))
                 for seed in (1, 2)]
        self.assertLess(tiles[0] + tiles[1], 40)
        for want in (f"fit seeds [1] ({tiles[0]} shapes), check seeds [2] ({tiles[1]} shapes)", "current, check seeds",
                     "fitted rule (fit seeds only): weights: sm90_128x256 100,", "fitted, check seeds"):
            self.assertIn(want, text)
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            fit_rule.main(["--fit-seeds", "1", "--check-seeds", "1", path])


class Compare(unittest.TestCase):
    def setUp(self):
        self.items = [(64, 64, 64, "plain"), (128, 256, 512, "bias"), (4096, 4096, 4096, "c"), (16, 16, 16, "f32_out")]
        self.ours = {"rows": [
            {"index": 0, "m": 64, "n": 64, "k": 64, "epilogue": "plain", "status": "PASS", "median_us": 2.0,
             "config": "sm90_64x32", "split_k": 1},
            {"index": 1, "m": 128, "n": 256, "k": 512, "epilogue": "bias", "status": "PASS", "median_us": 4.0,
             "config": "sm90_128x64", "split_k": 1},
            {"index": 2, "m": 4096, "n": 4096, "k": 4096, "epilogue": "c", "status": "PASS", "median_us": 200.0,
             "config": "sm90_128x256", "split_k": 1},
            {"index": 3, "m": 16, "n": 16, "k": 16, "epilogue": "f32_out", "status": "FAIL", "median_us": None,
             "config": "sm90_64x32", "split_k": 1}]}
        self.cublas = {"rows": [
            {"index": i, "m": m, "n": n, "k": k, "epilogue": t, "median_us": us, "what": "x", "kernels": 1}
            for i, ((m, n, k, t), us) in enumerate(zip(self.items, (3.0, 2.0, 220.0, 1.0)))]}

    def test_rows_and_summary_by_hand(self):
        rows = sweep_compare.build_rows(self.items, self.ours, self.cublas, 800e12, 3.02e12)
        self.assertEqual([r["ratio"] for r in rows], [1.5, 0.5, 1.1, None])
        self.assertAlmostEqual(rows[2]["ours_pct_floor"], 100.0 * 171.798691 / 200.0, places=3)
        s = sweep_compare.summarize(rows)
        self.assertEqual(s["n"], 3)
        self.assertAlmostEqual(s["geomean"], (1.5 * 0.5 * 1.1) ** (1 / 3))
        self.assertEqual(s["worst"], 0.5)
        self.assertEqual(s["worst_shape"], "#1 128x256x512 bias")
        self.assertEqual([r["index"] for r in s["ten_worst"]], [1, 2, 0])
        self.assertEqual(s["failed"], ["#3 16x16x16 f32_out"])
        self.assertFalse(s["targets_met"])
        # the timed rows alone would meet the targets: a failed check still does not
        good = [dict(r, ratio=1.2 if r["ratio"] else None) for r in rows]
        self.assertFalse(sweep_compare.summarize(good)["targets_met"])
        self.assertTrue(sweep_compare.summarize(good[:3])["targets_met"])
        labels = {g["label"]: g for g in s["groups"]}
        self.assertEqual(labels["bias"]["n"], 1)
        self.assertAlmostEqual(labels["beta*C (c, c_alias)"]["geomean"], 1.1)
        for markdown in (False, True):
            text = sweep_compare.render(rows, s, "header", {"plain": "torch.mm"}, {"plain": 1}, markdown)
            self.assertIn("geometric mean 0.938 over 3 of 4 shapes, worst 0.500 at #1 128x256x512 bias", text)
            self.assertIn("torch.mm", text)
            self.assertIn("sm90_128x64/1", text)

    def test_labels(self):
        ours = {"rows": [dict(self.ours["rows"][2], multicast=True), dict(self.ours["rows"][0], dense_a=True)]}
        items, cublas = [self.items[2], self.items[0]], {"rows": [dict(self.cublas["rows"][2], index=0),
                                                               dict(self.cublas["rows"][0], index=1)]}
        for r, i in zip(ours["rows"], (0, 1)):
            r["index"] = i
        rows = sweep_compare.build_rows(items, ours, cublas, 800e12, 3.02e12)
        self.assertEqual([r["config"] for r in rows], ["sm90_128x256^M", "sm90_64x32^D"])

    def test_bench_compare_glue(self):
        import bench_compare
        items = sweep.draw(6, 3, 1 << 26, 1.0)
        seen = []

        def fake_run(cmd, what):
            seen.append((what, cmd))
            rows = [{"index": i, "m": m, "n": n, "k": k, "epilogue": t, "median_us": 10.0 + i,
                     "status": "PASS", "config": "sm90_128x64", "split_k": 1, "what": "call", "kernels": 1}
                    for i, (m, n, k, t) in enumerate(items)]
            return 0, {"device": "Fake", "rows": rows, "ops": {"c": "torch.addmm"}, "kernels": {"c": 2}}

        real = bench_compare.run_json
        bench_compare.run_json = fake_run
        try:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = bench_compare.main(["--sweep", "6", "--seed", "3", "--mem-cap", str(1 << 26),
                                         "--epilogue-fraction", "1", "--replays", "5", "--order", "cublas-first"])
        finally:
            bench_compare.run_json = real
        self.assertEqual(rc, 0)
        self.assertEqual([w for w, _ in seen], ["cublas", "barecuda"])
        ours_cmd = dict(seen)["barecuda"]
        self.assertEqual(ours_cmd[1:], ["bench", "--json", "--replays", "5", "--sweep", "6", "--seed", "3", "--mem-cap",
                                        str(1 << 26), "--epilogue-fraction", "1.0"])
        self.assertIn("--replays", dict(seen)["cublas"])
        self.assertIn("geometric mean 1.000 over 6 of 6 shapes", out.getvalue())
        self.assertIn("torch.addmm", out.getvalue())
        for argv in (["--sweep", "6"], ["--sweep", "6", "--seed", "1", "--shapes", "1x1x8"], ["--seed", "4"]):
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
                bench_compare.main(argv)

    def test_list_mismatch(self):
        self.assertEqual(sweep_compare.check_lists(self.items, self.ours, self.cublas), [])
        bad = {"rows": [dict(self.cublas["rows"][0], m=65)]}
        self.assertEqual(len(sweep_compare.check_lists(self.items, self.ours, bad)), 1)


class Subsets(unittest.TestCase):
    """tools/sweep_subsets.py on four hand-made rows; the expected counts,
    geometric means and worsts are worked out by hand below."""

    ROWS = [  # m, n, k, epilogue, status, ratio, config
        (16, 1, 16, "plain", "PASS", "2.0", "sm90_dot"),  # M = 16: the M <= 16 boundary
        (100, 8, 64, "bias", "PASS", "0.5", "sm90_128x64t"),
        (20, 204, 200, "f32_out", "PASS", "1.0", "sm90_64x32s"),
        (5000, 5000, 5000, "plain", "FAIL", "", "sm90_128x256"),  # no ratio: left out
    ]

    def table(self, rows=None):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.csv")
            with open(path, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["index", "m", "n", "k", "epilogue", "ours_status", "ratio", "config"])
                for i, r in enumerate(self.ROWS if rows is None else rows):
                    w.writerow([i, *r])
            return {name: (n, g, lo) for name, n, g, lo in sweep_subsets.subsets(sweep_subsets.load(path))}

    def check(self, t, name, n, g, lo):
        self.assertEqual(t[name][0], n, name)
        if n == 0:
            self.assertIsNone(t[name][1], name)
        else:
            self.assertAlmostEqual(t[name][1], g, places=9, msg=name)
            self.assertAlmostEqual(t[name][2], lo, places=9, msg=name)

    def test_subsets_by_hand(self):
        t = self.table()
        half = math.sqrt(0.5)  # geometric mean of 0.5 and 1.0
        self.check(t, "plain", 1, 2.0, 2.0)  # the failed plain row is not counted
        self.check(t, "bias (`bias`, `bias_relu`)", 1, 0.5, 0.5)
        self.check(t, "f32 out", 1, 1.0, 1.0)
        self.check(t, "beta·C (`c`, `c_alias`)", 0, None, None)
        self.check(t, "K <= 128 (one or two k-blocks)", 2, 1.0, 0.5)  # sqrt(2.0 * 0.5)
        self.check(t, "K a multiple of 64 (rows on the 128-byte grid)", 1, 0.5, 0.5)
        # K = 16: on the sectors, off the lines; K = 200 = 25 x 8: off the sectors
        self.check(t, "K a multiple of 16, not of 64 (rows on 32-byte sectors, off the lines)", 1, 2.0, 2.0)
        self.check(t, "K an odd multiple of 8 (rows off the 32-byte sectors)", 1, 1.0, 1.0)
        # D rows: 1 x 2 B no; 8 x 2 B = 16 yes; 204 x 4 B (f32 out) = 816 yes (408 in 2-byte elements: no)
        self.check(t, "D rows 16-byte multiples", 2, half, 0.5)
        self.check(t, "D rows not 16-byte multiples", 1, 2.0, 2.0)
        self.check(t, "M <= 16", 1, 2.0, 2.0)
        self.check(t, "17 <= M <= 128 and N <= 256", 2, half, 0.5)
        self.check(t, "N = 1", 1, 2.0, 2.0)
        self.check(t, "... of them at most 64 outputs", 1, 2.0, 2.0)
        self.check(t, "short-K twins (`sm90_128x64t`, `sm90_64x32t`)", 1, 0.5, 0.5)
        self.check(t, "narrow split (`sm90_64x32s`)", 1, 1.0, 1.0)
        self.check(t, "... on the multicast twin (`NAME^M`)", 0, None, None)

    def test_row_tile_subset(self):
        t = self.table([(56, 10928, 3088, "plain", "PASS", "0.8", "sm90_64x256"),
                        (22, 8080, 5560, "bias", "PASS", "1.25", "sm90_64x256s"),
                        (56, 10928, 3088, "plain", "PASS", "2.0", "sm90_128x256")])
        self.check(t, "one tile row of 256 columns (`sm90_64x256`, `sm90_64x256s`)", 2, 1.0, 0.8)

    def test_multicast_subset(self):
        t = self.table([(4096, 4096, 4088, "plain", "PASS", "0.8", "sm90_128x256^M"),
                        (4096, 4096, 4096, "plain", "PASS", "2.0", "sm90_128x256")])
        self.check(t, "... on the multicast twin (`NAME^M`)", 1, 0.8, 0.8)

    def test_render_two_files(self):
        t = sweep_subsets.subsets([])
        text = sweep_subsets.render([t, t], ["a", "b"])
        self.assertIn("| subset (a / b) | shapes | geomean ratio | worst |", text)
        self.assertIn("| plain | 0 / 0 | - / - | - / - |", text)


class NcuRegions(unittest.TestCase):
    """Regions end at control instructions; shares are of the whole kernel."""

    PAGE = [
        ["Kernel Name", "k", ""],
        ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed"],
        ["0x10", "IMAD R1, R2, R3, RZ ;", "1", "30"],
        ["0x20", "@P0 BAR.SYNC.DEFER_BLOCKING R8, 0x80 ;", "3", "10"],
        ["0x30", "FMUL R4, R5, UR16 ;", "0", "40"],
        ["0x40", "@!P1 FMUL R6, R7, UR16 ;", "0", "10"],
        ["0x50", "@P0 BRA 0x30 ;", "6", "10"],
        ["0x60", "EXIT ;", "", ""],
    ]

    def test_regions_and_shares(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "src.csv")
            with open(path, "w", newline="") as f:
                csv.writer(f).writerows(self.PAGE)
            name, rows = ncu_regions.read(path)
            self.assertEqual(name, "k")
            self.assertEqual(rows[4], ("0x50", "@P0 BRA 0x30 ;", 10, 6))
            self.assertEqual(rows[5][2:], (0, 0))
            regs = ncu_regions.regions(rows)
            self.assertEqual([(g["addr"], g["n"], g["ex"], g["samples"]) for g in regs],
                             [("0x10", 2, 40, 4), ("0x30", 3, 60, 6), ("0x60", 1, 0, 0)])
            self.assertEqual(regs[1]["ops"], {"FMUL": 50, "BRA": 10})
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(ncu_regions.main([path, "--min", "50"]), 0)
            text = out.getvalue()
            self.assertIn("k: 100 warp instructions executed, 10 stall samples", text)
            self.assertIn("0x30", text)  # 60% of the instructions
            self.assertNotIn("0x10 ", text)  # 40% and 40%: under --min 50


if __name__ == "__main__":
    unittest.main()
