#!/usr/bin/env python3
"""Fits the GEMM configuration rule to forced-configuration sweep timings.

Input: the CSV files of `barecuda bench --sweep N --seed S --config C --split K
--csv FILE` for every configuration and split (tools/device/sweep_calib.sh
writes them), several seeds. Each (seed, index) is one shape with its
epilogue; each PASS row one measured candidate (configuration, split).

The rule is runtime/gemm_rule.c's rule_cost() over runtime/gemm_family_sm90.c's table, in Python with the same
integer arithmetic: for every candidate (whole-tile configurations with split
1; split-K configurations with S = 2, 4, 8 up to the k-blocks)

    cost = waves * BM * BN * work * 100 // weight * (100 + surcharge) // (100 + credit)
    waves = ceil(ceil(M/BM) * ceil(N/BN) * S / SMs)
    work  = ceil(ceil(K/BK) / S) + (S > 1) * split_cost
            + (S = 8 on more CTAs than its clusters-of-8 share of the SMs) * clusters-of-8 cost
            + tile_kb + c_kb * (C read) + f32_kb * (f32 output)

    surcharge = the 256-wide whole tile's for K of at most BC_SM90_WIDE_SHORT_KB k-blocks
                (BC_SM90_WIDE_SHORT_PCT; its epilogue is most of a tile there)
    credit = the 256-wide tiles' credit for rows off the 128-byte grid (off the 32-byte
             sectors: BC_SM90_OFF_SECTOR_PCT, or for the whole tile BC_SM90_OFF_TWIN_PCT from
             BC_SM90_MC_MIN_KB k-blocks on at most BC_SM90_OFF_TWIN_ROWS tile rows; off the lines: BC_SM90_OFF_LINE_PCT x
             min(K's k-blocks, BC_SM90_OFF_FULL_KB) / BC_SM90_OFF_FULL_KB; packed rows, pitch 2K)

and the least cost wins (first in table order on a tie), except that within
its M range a skinny-M configuration wins over every other one (the costs
compare among the skinny ones). A split entry of its own (SM90_SPLIT_CONFIG:
the skinny and narrow split tiles) names its exchange cost and the % of the
SMs' CTAs a round of its clusters holds, and shares the clusters-of-8
constants; none of these is fitted. split_cost and the
weights are the C constants; tile_kb, c_kb and f32_kb are extra terms (0 in
the C rule today): a fixed cost per tile (small K), the C load, the wider
store. The current constants are read from runtime/gemm_rule.c and
kernels_ptx/gemm_abi.h, so the "current" rule is the compiled one.

Reports, separately for the fit seeds and the check seeds: how often the rule
picks the fastest measured candidate, the geometric-mean loss
(time of its pick / time of the per-shape best) and the worst loss; then
searches the constants (integer coordinate descent from the current ones,
plus seeded restarts) for the least geometric-mean loss on the fit seeds only,
and reports the fitted rule on both.

usage: tools/fit_rule.py --fit-seeds 1,2 --check-seeds 3,4 CSV... [--no-extra] [--json]
       tools/fit_rule.py --choose < "M N K SMS" lines   (the current rule's choices)
       tools/fit_rule.py --list-configs                 (name and whether it splits K)
"""
import argparse
import csv
import glob
import json
import math
import os
import random
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_rule(plan_c=None, abi_h=None, family_c=None):
    """The compiled rule: {'configs': [...], 'split_cost': int, 'max_split': int, 'extra': {...}}. The sm_90a
    table and its split cost live in runtime/gemm_family_sm90.c, the split limit in runtime/gemm_rule.c."""
    plan_c = plan_c or os.path.join(ROOT, "runtime", "gemm_rule.c")
    family_c = family_c or (plan_c if plan_c.endswith("family_sm90.c") else
                            os.path.join(os.path.dirname(plan_c), "gemm_family_sm90.c"))
    abi_h = abi_h or os.path.join(ROOT, "kernels_ptx", "gemm_abi.h")
    with open(plan_c) as f:
        plan = f.read()
    if os.path.exists(family_c) and family_c != plan_c:
        with open(family_c) as f:
            plan += "\n" + f.read()
    with open(abi_h) as f:
        abi = f.read()
    # the dense-row kernel's test (gemm_plan.c): beside the rule's files, else the tree's (a synthetic rule's
    # directory holds none)
    plan_path = os.path.join(os.path.dirname(family_c), "gemm_plan.c")
    if not os.path.exists(plan_path):
        plan_path = os.path.join(ROOT, "runtime", "gemm_plan.c")
    with open(plan_path) as f:
        plan_src = f.read()

    def define(text, name, default=None):
        m = re.search(r"#define\s+" + name + r"\s+(\d+)u?\b", text)
        if not m:
            if default is not None:
                return default
            raise ValueError(f"cannot find #define {name}")
        return int(m.group(1))

    bk = define(abi, "BC_SM90_BK")
    cfgs = []
    # SM90_CONFIG(name, id, weight, cfg), SM90_CONFIG_MC(name, id, mc_id, weight, cfg) (its multicast twin is the
    # plan's choice, not the rule's), SM90_CONFIG_SK(name, id, sk_id, weight, cfg) (a whole-tile one with a
    # stream-K twin, which the rule weighs only where a plan allows stream-K: not modelled here),
    # SM90_CONFIG_SK_MC(name, id, sk_id, mc_id, weight, cfg) or SM90_CONFIG_SK_MC4(...) (both twins),
    # SM90_SPLIT_CONFIG(name, id, weight, cost, wave, cfg),
    # SM90_SHORT_K_CONFIG(name, id, dense_id, weight, per_sm, min_m, cfg) or
    # SM90_ROW_CONFIG(name, id, weight, cfg) (one tile row: M, K and split bounds), in table order
    entry = (r'BC__APPLY\((SM90_ROW_CONFIG|SM90_CONFIG_SK_MC4|SM90_CONFIG_SK_MC|SM90_CONFIG_SK|SM90_CONFIG_MC|SM90_CONFIG|SM90_SPLIT_CONFIG|SM90_SHORT_K_CONFIG),'
             r'\s*"([^"]+)",\s*\w+,\s*(?:BC_K_\w+,\s*){0,2}'
             r'(\d+),\s*'
             r'(?:(\w+),\s*(\w+),\s*)?(\w+)\)')
    for kind, nm, w, x1, x2, macro in re.findall(entry, plan):  # x1, x2: a split or short-K entry's extra fields
        m = re.search(r"#define\s+" + macro + r"\s+(\d+),\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+)", abi)
        if not m:
            raise ValueError(f"cannot find #define {macro} in {abi_h}")
        cons, bn, _stages, ks, ar = (int(x) for x in m.groups())
        # A stages of fewer rows than the tile: a skinny-M configuration (gemm_rule.c: max_m)
        max_m = ar if ar < 64 * cons else 0
        cfg = {"name": "sm90_" + nm, "bm": 64 * cons, "bn": bn, "bk": bk, "weight": int(w), "split": bool(ks),
               "max_m": max_m}
        if kind == "SM90_SPLIT_CONFIG":  # its own exchange cost and wave (named #defines)
            cfg["split_cost"] = define(plan, x1)
            cfg["wave_pct"] = define(plan, x2)
            cfg["c8_pct"] = define(plan, "BC_SM90_CLUSTER8_PCT")  # clusters of 8 past this share of the SMs ...
            cfg["c8_cost"] = define(plan, "BC_SM90_CLUSTER8_COST_KB")  # ... cost this many k-blocks more
        if kind == "SM90_ROW_CONFIG":  # walked only for M <= rule_max_m from rule_min_kb k-blocks, split at most
            cfg["rule_max_m"] = define(plan, "BC_SM90_ROW_MAX_M")  # rule_max_split ways; its split's clusters
            cfg["rule_min_kb"] = define(plan, "BC_SM90_ROW_MIN_KB")  # the skinny ones' wave share
            cfg["rule_max_split"] = define(plan, "BC_SM90_ROW_MAX_SPLIT")
            if ks:
                cfg["wave_pct"] = define(plan, "BC_SM90_SKINNY_WAVE_PCT")
        if kind == "SM90_SHORT_K_CONFIG":  # taken outright for K of at most max_kb k-blocks and M >= min_m
            cfg["max_kb"] = define(plan, "BC_SM90_SHORT_K_MAX_KB")
            cfg["min_m"] = define(plan, x2)  # (CTAs per SM, least M)
            # also up to wide_kb k-blocks when its tiles outnumber half the SMs: the skinny twin (least M 1), and
            # the two-consumer twin with the operands' rows on the 32-byte sectors (gemm_family_sm90.c,
            # SM90_SHORT_K_CONFIG)
            cfg["wide_sectors"] = cfg["min_m"] > 1 and cons > 1
            cfg["wide_kb"] = define(plan, "BC_SM90_SKINNY_SHORT_K_WIDE_KB") if cfg["min_m"] <= 1 else \
                define(plan, "BC_SM90_SHORT_K_SECTOR_KB") if cons > 1 else 0
            # D rows off 16 bytes: the alternative from ud_min_rounds rounds of its tiles (bc__gemm_unaligned_alt)
            alt = re.search(r"#define\s+BC_SM90_UD_ALT\(cons, bn_\)\s*\(\(cons\) == (\d+)u && \(bn_\) == (\d+)u \? "
                            r'"([^"]+)"', plan)
            if alt and cons == int(alt.group(1)) and bn == int(alt.group(2)):
                cfg["ud_alt"] = alt.group(3)
                cfg["ud_min_rounds"] = define(plan, "BC_SM90_UD_MIN_ROUNDS")
                cfg["ud_min_rounds_f32"] = define(plan, "BC_SM90_UD_MIN_ROUNDS_F32")
                # ... and D rows on 16 bytes from ad_min_rounds rounds, K within max_kb, not on the dense-row kernel
                # (bc__gemm_aligned_alt; gemm_plan.c, dense_flags: its constants read from gemm_plan.c)
                cfg["ad_min_rounds"] = define(plan, "BC_SM90_AD_MIN_ROUNDS", 0)
                cfg["ad_min_k"] = define(plan, "BC_SM90_AD_MIN_K", 0)
                cfg["per_sm"], cfg["a_rows"] = int(x1), ar
                cfg["dense_min_pct"] = define(plan, "BC_SM90_DENSE_MIN_PCT_2CONS") if cons > 1 else 0
                saved = re.search(r"#define\s+BC_DENSE_MIN_SAVED\s+([\d.]+)", plan_src)
                cfg["dense"] = {"group_m": define(plan_src, "GROUP_M"),
                                "min_ctas": define(plan_src, "BC_DENSE_MIN_CTAS"), "min_saved": float(saved.group(1))}
        # the off-grid credit of the wide tiles (gemm_family_sm90.c, BC_SM90_OFF_LINE_PCT; 0 where the table has none)
        wide = bn >= define(plan, "BC_SM90_OFF_MIN_BN", 1 << 30)
        cfg["off_line"] = define(plan, "BC_SM90_OFF_LINE_PCT", 0) if wide else 0
        cfg["off_sector"] = define(plan, "BC_SM90_OFF_SECTOR_PCT", 0) if wide else 0
        cfg["off_full_kb"] = define(plan, "BC_SM90_OFF_FULL_KB", 0)
        if kind == "SM90_CONFIG_MC":  # the 256-wide whole tile's short-K surcharge and twins' credit (gemm_family_sm90.c)
            cfg["short_max_kb"] = define(plan, "BC_SM90_WIDE_SHORT_KB", 0)
            cfg["short_pct"] = define(plan, "BC_SM90_WIDE_SHORT_PCT", 0)
            cfg["off_twin"] = define(plan, "BC_SM90_OFF_TWIN_PCT", 0)
            cfg["off_twin_min_kb"] = define(plan, "BC_SM90_MC_MIN_KB", 0)
            cfg["off_twin_rows"] = define(plan, "BC_SM90_OFF_TWIN_ROWS", 0)
        if kind == "SM90_CONFIG_SK_MC4":  # the 2 x 2 twin's least k-blocks, and the crowded round's alternative
            cfg["mc4_min_kb"] = define(plan, "BC_SM90_MC4_MIN_KB")
            alt = re.search(r"#define\s+BC_SM90_CROWD_ALT\(cons, bn_\)\s*\(\(cons\) == (\d+)u && \(bn_\) == (\d+)u \? "
                            r'"([^"]+)"', plan)
            if alt and cons == int(alt.group(1)) and bn == int(alt.group(2)):
                cfg["crowd_alt"] = alt.group(3)
                cfg["crowd_min_kb"] = define(plan, "BC_SM90_CROWD_MIN_KB")
        cfgs.append(cfg)
    if not cfgs:
        raise ValueError(f"no SM90_CONFIG entries in {plan_c}")
    split_cost = define(plan, "BC_SPLIT_COST_KB")
    for c in cfgs:
        if c.get("max_kb"):  # tiles for 1 / share of the SMs, or more; a 64 x 32 one any number (gemm_family_sm90.c)
            c["sm_share"] = define(plan, "BC_SM90_SHORT_K_SM_SHARE") if c["bm"] * c["bn"] > 2048 else 0
    # the dot kernel (gemm_family_sm90.c): M x N of at most BC_DOT_MAX_OUT and K beyond the short-K
    # twins' k-blocks, taken before every other; its split (gemm_rule.c, dot_shape) from K's 16-byte chunks
    dot = None
    if '.name = "sm90_dot"' in plan:
        dot = {"max_out": define(abi, "BC_DOT_MAX_OUT"), "max_q": define(abi, "BC_DOT_MAX_Q"),
               "min_k": define(plan, "BC_SM90_SHORT_K_MAX_KB") * bk + 1,
               "max_loads": define(plan, "BC_SM90_DOT_MAX_LOADS"),
               "min_chunks": define(plan, "BC_DOT_MIN_CHUNKS"), "wave_pct": define(plan, "BC_DOT_WAVE_PCT")}
    if dot and '.dot_cede_min_q = BC_SM90_DOT_CEDE_MIN_Q' in plan:
        dot.update({"cede_min_q": define(plan, "BC_SM90_DOT_CEDE_MIN_Q"),
                    "cede_max_k": define(plan, "BC_SM90_DOT_CEDE_MAX_K")})
    # the GEMV kernel (gemm_family_sm90.c): the smaller side at most BC_GEMV_MAX_Q rows, any K (gemm_rule.c,
    # takes_gemv), taken after the dot kernel and before every tile configuration; its
    # split (gemm_rule.c, gemv_grid) from K's 32-element steps and the rows
    gemv = None
    if '.name = "sm90_gemv"' in plan:
        gemv = {"max_q": define(abi, "BC_GEMV_MAX_Q"),
                "step": define(abi, "BC_GEMV_STEP"), "split_min_steps": define(plan, "BC_GEMV_SPLIT_MIN_STEPS"),
                "ctas_per_sm": define(plan, "BC_GEMV_CTAS_PER_SM"), "wave_pct": define(plan, "BC_DOT_WAVE_PCT")}
        # its 32-row twin: the rule's for 17-32 rows with a larger side of at most BC_GEMV32_RULE_MAX_ROWS and
        # K of at most BC_GEMV32_RULE_MAX_K
        if '.name = "sm90_gemv32"' in plan:
            gemv["max_q32"] = define(abi, "BC_GEMV32_MAX_Q")
            gemv["max_rows32"] = define(plan, "BC_GEMV32_RULE_MAX_ROWS")
            gemv["max_k32"] = define(plan, "BC_GEMV32_RULE_MAX_K")
    return {"configs": cfgs, "split_cost": split_cost, "max_split": define(plan, "BC_MAX_SPLIT_K"),
            "bk": bk, "dot": dot, "gemv": gemv, "extra": {"tile_kb": 0, "c_kb": 0, "f32_kb": 0}}


def cdiv(a, b):
    return (a + b - 1) // b


def split_options(cfg, k, rule):
    """Splits the rule considers (desc.split_k = 0): 1 for whole tiles, 2, 4, 8 up to the k-blocks (and the
    configuration's rule_max_split) for split-K."""
    kb = cdiv(k, rule["bk"])
    if not cfg["split"]:
        return [1]
    out, s = [], 2
    while s <= min(rule["max_split"], cfg.get("rule_max_split") or rule["max_split"]) and s <= kb:
        out.append(s)
        s *= 2
    return out


def wave_of(cfg, s, sms):
    """CTAs in one round (gemm_rule.c, round_ctas): every SM's, or for a split of 4 or 8 with its own
    cluster wave share, that share (clusters of 2 fill every SM)."""
    return max(1, sms * cfg["wave_pct"] // 100) if s > 2 and cfg.get("wave_pct") else sms


def past_one_round(cfg, s, m, n, sms):
    """A split with its own cluster wave share whose CTAs one round does not hold: the rule skips it
    (gemm_rule.c, split_past_one_round)."""
    return s > 1 and bool(cfg.get("wave_pct")) and cdiv(m, cfg["bm"]) * cdiv(n, cfg["bn"]) * s > wave_of(cfg, s, sms)


def off_grid_credit(cfg, k, m):
    """gemm_rule.c, off_grid_credit, for packed 16-bit operands (row pitch 2K bytes, as the sweeps draw them);
    off the sectors the twins' credit from off_twin_min_kb k-blocks on at most off_twin_rows tile rows of M."""
    pitch, kb = 2 * k, cdiv(k, 64)
    if pitch % 32:
        if cfg.get("off_twin") and kb >= cfg["off_twin_min_kb"] and cdiv(m, cfg["bm"]) <= cfg["off_twin_rows"]:
            return cfg["off_twin"]
        return cfg.get("off_sector", 0)
    if pitch % 128 and cfg.get("off_full_kb"):
        return cfg.get("off_line", 0) * min(kb, cfg["off_full_kb"]) // cfg["off_full_kb"]
    return 0


def short_surcharge(cfg, k):
    """gemm_rule.c, rule_cost: the configuration's surcharge, in % of its cost, for K of at most short_max_kb
    k-blocks (the 256-wide whole tile's; 0 for the others)."""
    return cfg.get("short_pct", 0) if cdiv(k, cfg["bk"]) <= cfg.get("short_max_kb", 0) else 0


def rule_cost(cfg, s, m, n, k, sms, rule, weight=None, c_read=False, f32=False):
    ctas = cdiv(m, cfg["bm"]) * cdiv(n, cfg["bn"]) * s
    waves = cdiv(ctas, wave_of(cfg, s, sms))
    kb = cdiv(k, cfg["bk"])
    ex = rule["extra"]
    crowded = s >= 8 and cfg.get("c8_pct") and ctas * 100 > sms * cfg["c8_pct"]
    work = cdiv(kb, s) + ((cfg.get("split_cost") or rule["split_cost"]) if s > 1 else 0) + ex["tile_kb"] + (ex["c_kb"] if c_read else 0) + \
        (ex["f32_kb"] if f32 else 0) + (cfg["c8_cost"] if crowded else 0)
    cost = waves * cfg["bm"] * cfg["bn"] * work * 100 // (weight if weight is not None else cfg["weight"])
    return cost * (100 + short_surcharge(cfg, k)) // (100 + off_grid_credit(cfg, k, m))


def short_k_takes(cfg, m, n, k, sms):
    """gemm_rule.c, short_k_takes: K within its k-blocks, or within its wide k-blocks when its tiles outnumber
    half the SMs (and, for wide_sectors, the rows, 2K bytes, lie on the 32-byte sectors); M from its least;
    unless its tile is 64 x 32, tiles for at least a quarter of the SMs."""
    kb, tiles = cdiv(k, cfg["bk"]), cdiv(m, cfg["bm"]) * cdiv(n, cfg["bn"])
    wide = kb <= cfg["wide_kb"] and 2 * tiles > sms and (not cfg.get("wide_sectors") or 2 * k % 32 == 0)
    if kb > cfg["max_kb"] and not wide:
        return False
    return m >= cfg["min_m"] and not (cfg["sm_share"] and cfg["sm_share"] * tiles < sms)


def candidates(m, n, k, rule, sms):
    """Configurations the rule weighs: a skinny-M one only within its M range, a short-K one only where it
    takes the problem (short_k_takes), a one-row one only within its M and from its k-blocks."""
    return [(cfg, s) for cfg in rule["configs"] if not cfg.get("max_m") or m <= cfg["max_m"]
            if not cfg.get("max_kb") or short_k_takes(cfg, m, n, k, sms)
            if not cfg.get("rule_max_m") or (m <= cfg["rule_max_m"] and cdiv(k, cfg["bk"]) >= cfg["rule_min_kb"])
            for s in split_options(cfg, k, rule)]


def precedence(cfg):
    """The rule's order before the cost (gemm_rule.c, rule_better): skinny-M, then short-K, then the rest."""
    return (0 if cfg.get("max_m") else 1, 0 if cfg.get("max_kb") else 1)


def choose(m, n, k, sms, rule, c_read=False, f32=False):
    """(config name, split): the least cost, the first one on a tie (gemm_rule.c, bc__gemm_choose); a skinny-M
    configuration that fits wins outright over the others, and among the skinny ones the least cost wins.
    N = 1 (no bias, D one contiguous column) runs transposed, 1 x M x K, with M > 1 and K within the skinny
    short-K configuration's k-blocks, or with M > 16, K over 16 k-blocks and ceil(M / 64) at most half the SMs,
    when that takes a skinny configuration (gemm_rule.c, swap_pays)."""
    return choose_swapped(m, n, k, sms, rule, c_read, f32)[:2]


def dot_grid(m, n, k, sms, rule):
    """The dot kernel's (cluster size, clusters, rows a cluster) (gemm_rule.c, dot_grid)."""
    d = rule["dot"]
    chunks, rows = k // 8, max(m, n)
    s = 1
    while s < rule["max_split"] and 2 * s * d["min_chunks"] <= chunks:
        s *= 2
    rnd = sms * d["wave_pct"] // 100 if s > 2 else sms
    most = max(1, rnd // s)
    per = cdiv(rows, min(rows, most))
    return s, cdiv(rows, per), per


def dot_choice(m, n, k, sms, rule):
    """("sm90_dot", its cluster size) where the rule takes the dot kernel (gemm_rule.c, takes_dot), else None."""
    d = rule.get("dot")
    q = min(m, n)
    if not d or q > d["max_q"] or k < d["min_k"]:
        return None
    s, _groups, per = dot_grid(m, n, k, sms, rule)
    loads = per * cdiv(k // 8, s) * (q + 1)
    if per * q > d["max_out"] or loads > d["max_loads"]:
        return None
    if d.get("cede_min_q") and q >= d["cede_min_q"] and k <= d["cede_max_k"]:
        return None  # the GEMV kernel's
    return "sm90_dot", s


def gemv_choice(m, n, k, sms, rule):
    """("sm90_gemv" or "sm90_gemv32", its cluster size) where the rule takes the GEMV kernel or its 32-row twin
    (gemm_rule.c, takes_gemv and gemv_grid), else None."""
    g = rule.get("gemv")
    q, rows = min(m, n), max(m, n)
    if not g:
        return None
    name = "sm90_gemv"
    if q > g["max_q"]:
        if q > g.get("max_q32", 0) or rows > g["max_rows32"] or k > g["max_k32"]:
            return None
        name = "sm90_gemv32"
    steps, s = cdiv(k, g["step"]), 1
    while True:
        t = 2 * s
        rnd = sms * g["ctas_per_sm"] * (g["wave_pct"] if t > 2 else 100) // 100
        if t > rule["max_split"] or steps // t < g["split_min_steps"] or cdiv(rows, 8) * t > rnd:
            break
        s = t
    return name, s


def choose_swapped(m, n, k, sms, rule, c_read=False, f32=False):
    """choose's (config name, split) and whether the plan runs transposed (1 or 0)."""
    dot = dot_choice(m, n, k, sms, rule) or gemv_choice(m, n, k, sms, rule)
    if dot:
        return dot + (0,)
    short_kb = [c["max_kb"] for c in rule["configs"] if c.get("max_m") and c.get("max_kb") and c["min_m"] <= 1]
    if n == 1 and ((m > 1 and any(cdiv(k, 64) <= x for x in short_kb)) or
                   (m > 16 and cdiv(k, 64) > 16 and 2 * cdiv(m, 64) <= sms)):
        t = choose_plain(1, m, k, sms, rule, c_read, f32)
        if any(c["name"] == t[0] and c.get("max_m") for c in rule["configs"]):
            return t + (1,)
    return choose_plain(m, n, k, sms, rule, c_read, f32) + (0,)


def choose_plain(m, n, k, sms, rule, c_read=False, f32=False):
    best = None
    for cfg, s in candidates(m, n, k, rule, sms):
        if past_one_round(cfg, s, m, n, sms):
            continue
        cost = (precedence(cfg), rule_cost(cfg, s, m, n, k, sms, rule, c_read=c_read, f32=f32))
        if best is None or cost < best[0]:
            best = (cost, cfg["name"], s)
    alt = unaligned_alt(m, n, sms, rule, best[1], best[2], c_read, f32) or \
        aligned_alt(m, n, k, sms, rule, best[1], best[2], c_read, f32)
    return alt or crowded_alt(m, n, k, sms, rule, best[1], best[2]) or best[1], best[2]


def dense_takes(m, n, k, sms, cfg):
    """Whether a packed plan of configuration cfg (whole tiles) takes its dense-row kernel (gemm_plan.c,
    dense_flags): K one partial k-block of whole 16-byte chunks, enough CTAs at once on a row of tiles, and
    enough of A's row requests saved."""
    if "dense" not in cfg or k >= cfg["bk"] or k % 8:
        return False
    dn = cfg["dense"]
    tm, tn = cdiv(m, cfg["bm"]), cdiv(n, cfg["bn"])
    grid = min(tm * tn, sms * cfg["per_sm"])
    band = min(tm, dn["group_m"])
    ctas = min(cdiv(grid, band), tn)
    rows, rb = min(m, cfg["a_rows"]), 2 * k
    requests = rows * (1.0 + (rb - math.gcd(rb, 128)) / 128.0)
    lines = cdiv(rows * rb, 128)
    return (ctas >= dn["min_ctas"] and ctas * (requests - lines) >= dn["min_saved"] and
            100.0 * (requests - lines) >= cfg["dense_min_pct"] * requests)


def aligned_alt(m, n, k, sms, rule, name, s, c_read, f32):
    """The configuration a choice gives way to where D's rows are on 16 bytes (gemm_rule.c,
    bc__gemm_aligned_alt; gemm_plan.c, take_alt), for packed operands, a plain epilogue and a plan not made
    for a resident executor: K from ad_min_k and within the choice's max_kb k-blocks, more tile columns than
    the alternative, at least ad_min_rounds rounds of its tiles, and the plan not on its dense-row kernel.
    None where it does not apply."""
    cfg = next(c for c in rule["configs"] if c["name"] == name)
    if not cfg.get("ud_alt") or not cfg.get("ad_min_rounds") or s != 1 or c_read or ((4 if f32 else 2) * n) % 16:
        return None
    if k < cfg["ad_min_k"] or cdiv(k, cfg["bk"]) > cfg["max_kb"] or not more_columns(n, rule, cfg) or \
            cdiv(m, cfg["bm"]) * cdiv(n, cfg["bn"]) < cfg["ad_min_rounds"] * sms:
        return None
    return None if dense_takes(m, n, k, sms, cfg) else cfg["ud_alt"]


def unaligned_alt(m, n, sms, rule, name, s, c_read, f32):
    """The configuration a choice gives way to where D's rows are off 16 bytes (gemm_rule.c,
    bc__gemm_unaligned_alt; gemm_plan.c, take_alt), for a packed D of N columns (16-bit, or f32 with f32) and a
    plain epilogue (the C rule also asks for no bias or ReLU, which --choose does not describe): at least
    ud_min_rounds rounds of the choice's tiles (ud_min_rounds_f32 for an f32 D) and more tile columns than the
    alternative. None where it does not apply."""
    cfg = next(c for c in rule["configs"] if c["name"] == name)
    if not cfg.get("ud_alt") or s != 1 or c_read or ((4 if f32 else 2) * n) % 16 == 0:
        return None
    rounds = cfg["ud_min_rounds_f32"] if f32 else cfg["ud_min_rounds"]
    return cfg["ud_alt"] if rounds and more_columns(n, rule, cfg) and \
        cdiv(m, cfg["bm"]) * cdiv(n, cfg["bn"]) >= rounds * sms else None


def more_columns(n, rule, cfg):
    """Whether cfg has more tile columns than its ud_alt for N (gemm_rule.c, plain_alt)."""
    alt = next(c for c in rule["configs"] if c["name"] == cfg["ud_alt"])
    return cdiv(n, alt["bn"]) < cdiv(n, cfg["bn"])


def crowded_alt(m, n, k, sms, rule, name, s):
    """The configuration a whole-tile choice gives way to where its one round crowds the SMs (gemm_rule.c,
    bc__gemm_crowded_alt; gemm_plan.c, take_alt), for packed 16-bit operands: its round on more than
    half the SMs, the alternative's on less than half, K of at least crowd_min_kb k-blocks and off the
    128-byte lines; not where the choice's 2 x 2 multicast twin takes the plan (rows off the sectors, its
    k-blocks, two tile rows and columns, its blocks within one round of clusters of four, which the plan asks
    the driver for: sms // 4 is the fake driver's count, the H100's is 30). None where it does not apply."""
    cfg = next(c for c in rule["configs"] if c["name"] == name)
    if not cfg.get("crowd_alt") or s != 1:
        return None
    rows, cols, kb = cdiv(m, cfg["bm"]), cdiv(n, cfg["bn"]), cdiv(k, cfg["bk"])
    if kb < cfg["crowd_min_kb"] or rows * cols > sms or 2 * rows * cols <= sms or (2 * k) % 128 == 0:
        return None
    alt = next(c for c in rule["configs"] if c["name"] == cfg["crowd_alt"])
    if 2 * cdiv(m, alt["bm"]) * cdiv(n, alt["bn"]) >= sms:
        return None
    if ((2 * k) % 32 and kb >= cfg["mc4_min_kb"] and rows >= 2 and cols >= 2 and
            cdiv(rows, 2) * cdiv(cols, 2) <= sms // 4):
        return None
    return alt["name"]


# ---------------------------------------------------------------- data

EPI_C_READ = {"c", "c_alias"}


def load(paths, default_sms):
    """{(seed, index): shape dict with 'times': {(config, split): us}} from the CSVs; PASS rows only."""
    shapes, logs = {}, {}
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if not r.get("seed"):
                    continue
                key = (int(r["seed"]), int(r["index"]))
                sh = shapes.setdefault(key, {
                    "seed": key[0], "index": key[1], "m": int(r["m"]), "n": int(r["n"]), "k": int(r["k"]),
                    "epilogue": r["epilogue"], "out": r["out"],
                    "sms": int(r["sm_count"]) if r.get("sm_count") else default_sms, "times": {}})
                if (sh["m"], sh["n"], sh["k"], sh["epilogue"]) != (int(r["m"]), int(r["n"]), int(r["k"]), r["epilogue"]):
                    raise ValueError(f"{path}: seed {key[0]} index {key[1]} is a different shape than in another file "
                                     "(files from different generators or options?)")
                if r["status"] != "PASS" or not r["median_us"] or r.get("swapped") == "1":
                    continue  # a transposed N = 1 plan times another problem than its (config, split) here
                logs.setdefault((key, r["config"], int(r["split"])), []).append(math.log(float(r["median_us"])))
    for (key, cfg, s), ls in logs.items():  # a split forced above the k-blocks repeats a smaller one: geometric mean
        shapes[key]["times"][(cfg, s)] = math.exp(sum(ls) / len(ls))
    return shapes


# ---------------------------------------------------------------- evaluation

def prepare(shapes, rule):
    """Per shape: its rule candidates with measured times and the precomputed cost factors."""
    prepared = []
    for sh in shapes:
        m, n, k = sh["m"], sh["n"], sh["k"]
        if dot_choice(m, n, k, sh["sms"], rule) or gemv_choice(m, n, k, sh["sms"], rule):
            # taken outright by the dot or the GEMV kernel: nothing for the weights
            continue
        cands = []
        for cfg, s in candidates(m, n, k, rule, sh["sms"]):
            if past_one_round(cfg, s, m, n, sh["sms"]):
                continue
            t = sh["times"].get((cfg["name"], s))
            ctas = cdiv(m, cfg["bm"]) * cdiv(n, cfg["bn"]) * s
            crowded = s >= 8 and cfg.get("c8_pct") and ctas * 100 > sh["sms"] * cfg["c8_pct"]
            cands.append({"cfg": cfg["name"], "s": s, "t": t,
                          "area_waves": cdiv(ctas, wave_of(cfg, s, sh["sms"])) * cfg["bm"] * cfg["bn"],
                          "kb": cdiv(cdiv(k, cfg["bk"]), s), "outright": precedence(cfg),
                          "split_cost": cfg.get("split_cost"), "c8": cfg["c8_cost"] if crowded else 0,
                          "credit": off_grid_credit(cfg, k, m),
                          "surcharge": short_surcharge(cfg, k)})
        measured = [c["t"] for c in cands if c["t"] is not None]
        if not measured:
            continue
        prepared.append({"shape": sh, "cands": cands, "best": min(measured), "worst": max(measured),
                         "c_read": sh["epilogue"] in EPI_C_READ, "f32": sh["out"] == "f32"})
    return prepared


def pick(p, params):
    w, sc, tk, ck, fk = params["weights"], params["split_cost"], params["tile_kb"], params["c_kb"], params["f32_kb"]
    extra = tk + (ck if p["c_read"] else 0) + (fk if p["f32"] else 0)
    best = None
    for c in p["cands"]:
        own = c.get("split_cost")
        work = c["kb"] + ((own or sc) if c["s"] > 1 else 0) + extra + c.get("c8", 0)
        cost = (c["outright"], c["area_waves"] * work * 100 // w[c["cfg"]] * (100 + c.get("surcharge", 0)) //
                (100 + c.get("credit", 0)))
        if best is None or cost < best[0]:
            best = (cost, c)
    return best[1]


def evaluate(prepared, params):
    """{'n', 'hits', 'unmeasured', 'geo_loss', 'worst': (loss, prepared item, pick), 'losses': [...]}."""
    total, hits, unmeasured, worst, losses = 0.0, 0, 0, None, []
    for p in prepared:
        c = pick(p, params)
        if c["t"] is None:  # the rule picks a candidate that has no time: count it as the slowest measured one
            unmeasured += 1
            loss = p["worst"] / p["best"]
        else:
            loss = c["t"] / p["best"]
            hits += c["t"] == p["best"]
        total += math.log(loss)
        losses.append((loss, p, c))
        if worst is None or loss > worst[0]:
            worst = (loss, p, c)
    n = len(prepared)
    return {"n": n, "hits": hits, "unmeasured": unmeasured, "geo_loss": math.exp(total / n) if n else float("nan"),
            "worst": worst, "losses": losses}


def params_of(rule):
    return {"weights": {c["name"]: c["weight"] for c in rule["configs"]}, "split_cost": rule["split_cost"],
            **rule["extra"]}


def objective(prepared, params):
    return evaluate(prepared, params)["geo_loss"]


def fit(prepared, start, rule, extra_terms=True, restarts=4, rounds=30, seed=12345):
    """Integer coordinate descent on the geometric-mean loss, from `start` and from seeded random restarts.
    The first configuration's weight stays fixed (weights are relative)."""
    names = [c["name"] for c in rule["configs"]]
    keys = [("weights", nm) for nm in names[1:]] + [("split_cost", None)]
    if extra_terms:
        keys += [("tile_kb", None), ("c_kb", None), ("f32_kb", None)]
    bounds = {"weights": (1, 400), "split_cost": (0, 400), "tile_kb": (0, 128), "c_kb": (0, 128), "f32_kb": (0, 128)}
    steps = [-64, -32, -16, -8, -4, -2, -1, 1, 2, 4, 8, 16, 32, 64]

    def get(p, key):
        return p[key[0]][key[1]] if key[1] else p[key[0]]

    def with_value(p, key, v):
        q = {"weights": dict(p["weights"]), **{k: p[k] for k in p if k != "weights"}}
        if key[1]:
            q["weights"][key[1]] = v
        else:
            q[key[0]] = v
        return q

    def descend(p):
        cur = objective(prepared, p)
        for _ in range(rounds):
            improved = False
            for key in keys:
                lo, hi = bounds[key[0]]
                base = get(p, key)
                for st in steps:
                    v = base + st
                    if not lo <= v <= hi:
                        continue
                    q = with_value(p, key, v)
                    val = objective(prepared, q)
                    if val < cur - 1e-12:
                        p, cur, improved = q, val, True
                        base = v
            if not improved:
                break
        return p, cur

    rng = random.Random(seed)
    best_p, best_v = descend(start)
    for _ in range(restarts):
        p = start
        for key in keys:
            lo, hi = bounds[key[0]]
            p = with_value(p, key, max(lo, min(hi, int(get(start, key) * rng.uniform(0.5, 1.5)) + rng.randint(-4, 4))))
        q, v = descend(p)
        if v < best_v - 1e-12:
            best_p, best_v = q, v
    return best_p


# ---------------------------------------------------------------- report

def shape_name(p):
    sh = p["shape"]
    return f"{sh['m']}x{sh['n']}x{sh['k']} {sh['epilogue']} (seed {sh['seed']} #{sh['index']})"


def summary_line(label, ev):
    if not ev["n"]:
        return f"{label:<30} no shapes"
    wl, wp, wc = ev["worst"]
    return (f"{label:<30} {ev['n']:4d} shapes  picks the fastest {100.0 * ev['hits'] / ev['n']:5.1f}%  "
            f"geomean loss {ev['geo_loss']:.4f}  worst {wl:.3f} at {shape_name(wp)}: picks {wc['cfg']}/{wc['s']}"
            + (f"  ({ev['unmeasured']} picks without a time)" if ev["unmeasured"] else ""))


def describe(params, names):
    w = ", ".join(f"{nm} {params['weights'][nm]}" for nm in names)
    return (f"weights: {w}; split_cost {params['split_cost']} k-blocks; tile_kb {params['tile_kb']}; "
            f"c_kb {params['c_kb']}; f32_kb {params['f32_kb']}")


def parse_seeds(text):
    try:
        seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad seed list '{text}'")
    if not seeds:
        raise argparse.ArgumentTypeError("empty seed list")
    return seeds


def run_choose(rule):
    for line in sys.stdin:
        f = line.split()
        if len(f) < 4:
            continue
        m, n, k, sms = (int(x) for x in f[:4])
        cfg, s, swapped = choose_swapped(m, n, k, sms, rule)
        print(f"{m} {n} {k} {sms} {cfg} {s} {swapped}")
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="*", help="CSV files or globs")
    ap.add_argument("--fit-seeds", type=parse_seeds)
    ap.add_argument("--check-seeds", type=parse_seeds)
    ap.add_argument("--sms", type=int, default=132, help="SM count when a CSV lacks the sm_count column")
    ap.add_argument("--no-extra", action="store_true", help="fit only the C rule's constants (weights, split cost)")
    ap.add_argument("--restarts", type=int, default=4)
    ap.add_argument("--worst", type=int, default=10, help="check-seed shapes listed with the largest loss")
    ap.add_argument("--plan", default=None, help="gemm_rule.c to read the current rule from")
    ap.add_argument("--abi", default=None, help="gemm_abi.h to read the tile shapes from")
    ap.add_argument("--choose", action="store_true", help="print the current rule's choice for 'M N K SMS' lines")
    ap.add_argument("--list-configs", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rule = read_rule(args.plan, args.abi)
    if args.choose:
        return run_choose(rule)
    if args.list_configs:
        for c in rule["configs"]:
            print(c["name"], 1 if c["split"] else 0)
        return 0
    if not args.fit_seeds or not args.check_seeds:
        ap.error("--fit-seeds and --check-seeds are required")
    if set(args.fit_seeds) & set(args.check_seeds):
        ap.error("a seed cannot be both a fit seed and a check seed")
    paths = sorted({p for pat in args.csv for p in (glob.glob(pat) or [pat])})
    if not paths:
        ap.error("no CSV files")
    shapes = load(paths, args.sms)
    by_seed = {}
    for sh in shapes.values():
        by_seed.setdefault(sh["seed"], []).append(sh)
    missing = [s for s in args.fit_seeds + args.check_seeds if s not in by_seed]
    if missing:
        print(f"fit_rule: no rows for seed(s) {missing} in {len(paths)} files", file=sys.stderr)
        return 1
    fit_set = prepare([sh for s in args.fit_seeds for sh in by_seed[s]], rule)
    check_set = prepare([sh for s in args.check_seeds for sh in by_seed[s]], rule)
    names = [c["name"] for c in rule["configs"]]
    current = params_of(rule)
    fitted = fit(fit_set, current, rule, extra_terms=not args.no_extra, restarts=args.restarts)
    res = {label: evaluate(data, p) for label, data, p in
           (("current fit", fit_set, current), ("current check", check_set, current),
            ("fitted fit", fit_set, fitted), ("fitted check", check_set, fitted))}
    cands = sum(sum(c["t"] is not None for c in p["cands"]) for p in fit_set + check_set)
    if args.json:
        out = {"files": paths, "fit_seeds": args.fit_seeds, "check_seeds": args.check_seeds,
               "current": current, "fitted": fitted,
               "results": {k: {"n": v["n"], "hits": v["hits"], "unmeasured": v["unmeasured"],
                               "geo_loss": v["geo_loss"], "worst_loss": v["worst"][0] if v["worst"] else None}
                           for k, v in res.items()}}
        print(json.dumps(out))
        return 0
    print(f"fit_rule: {len(paths)} files; fit seeds {args.fit_seeds} ({len(fit_set)} shapes), check seeds "
          f"{args.check_seeds} ({len(check_set)} shapes); {cands / max(1, len(fit_set) + len(check_set)):.1f} "
          "measured candidates per shape")
    print("loss = time of the rule's pick / time of the fastest measured candidate of the shape")
    print(f"current rule (gemm_rule.c): {describe(current, names)}")
    print(summary_line("  current, fit seeds", res["current fit"]))
    print(summary_line("  current, check seeds", res["current check"]))
    print(f"fitted rule (fit seeds only): {describe(fitted, names)}")
    print(summary_line("  fitted, fit seeds", res["fitted fit"]))
    print(summary_line("  fitted, check seeds", res["fitted check"]))
    worst = sorted(res["fitted check"]["losses"], key=lambda x: -x[0])[:args.worst]
    if worst:
        print(f"largest losses of the fitted rule on the check seeds:")
        for loss, p, c in worst:
            fastest = min((x for x in p["cands"] if x["t"] is not None), key=lambda x: x["t"])
            print(f"  {loss:6.3f}  {shape_name(p)}: picks {c['cfg']}/{c['s']} "
                  f"({'-' if c['t'] is None else format(c['t'], '.2f')} us), fastest {fastest['cfg']}/{fastest['s']} "
                  f"({fastest['t']:.2f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
