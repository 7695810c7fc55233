#!/usr/bin/env python3
"""Prints where a resident step goes, from the stamps of a diagnostic build
(tools/res_trace.sh): per event, ns after CTA 0 saw the doorbell (CTA 0,
then the median, min and max over CTAs), and clock cycles on CTAs 0 and 1,
each the median over the eight steps kept. Events (kernels_ptx/trace.h and
resident_sm90.c): pN.* are phase N (a grid barrier opens each after the
first); the unnumbered ones are written at every tile and keep the last."""
import struct, sys, statistics as st
NAMES = {0: 'seen', 1: 'cons_start', 26: 'fin_pub', 27: 'fin_arrive', 28: 'all_arrived'}
for p in range(4):
    for i, n in enumerate(['b_enter', 'pub', 'b_exit', 'first_full', 'tile_done', 'prod_issued']):
        NAMES[2 + 6 * p + i] = f'p{p}.{n}'
NAMES.update({20:'fence_done',21:'empty_ok',22:'tmaA_issued',23:'tmaB_issued',24:'mainloop_done',25:'bias_prefetched',29:'staged',30:'store_issued',31:'consume_start'})
NAMES.update({32:'c_res_step',33:'c_gemm_tiles',34:'c_before_consume',35:'epi_bar1',36:'epi_staged',37:'epi_bar2',38:'p_res_step',39:'p_gemm_tiles',40:'p_before_produce',41:'p_kb1_empty_ok',42:'p_kb1_B_issued',43:'p_kb7_B_issued',44:'c_kb1_full',45:'c_kb7_full',46:'c_last_full'})
REC = 16 + 256 + 8 * 132 * 64 * 16
def main(path):
    data = open(path, 'rb').read()
    nrec = len(data) // REC
    hdr = struct.unpack_from('4I', data, (nrec - 1) * REC)
    grid = hdr[1]
    base = (nrec - 1) * REC + 16 + 256
    rows = {}  # event -> list over steps of (cta0-relative gt of cta 0, max over ctas, median over ctas)
    cyc = {}
    gts = set()
    for s in range(8):
        def ev(c, e):
            return struct.unpack_from('2Q', data, base + ((s * 132 + c) * 64 + e) * 16)
        t0 = ev(0, 0)[0]
        if t0 == 0:
            continue
        for e in range(64):
            vals = []
            for c in range(grid):
                gt, clk = ev(c, e)
                if gt:
                    vals.append(gt - t0)
                    gts.add(gt % 1000)
            if vals:
                rows.setdefault(e, []).append((vals[0] if ev(0, e)[0] else None, max(vals), st.median(vals), min(vals), len(vals)))
        # per-CTA cycle deltas relative to event 0 for cta 0 / 1
        for c in (0, 1):
            c0 = ev(c, 0)[1]
            for e in range(1, 64):
                gt, clk = ev(c, e)
                if gt and c0:
                    cyc.setdefault((c, e), []).append(clk - c0)
    print(f'{path}: grid {grid} ops {hdr[2]} records {nrec}; distinct gt%1000: {len(gts)}')
    print(f'{"event":16s} {"cta0":>8s} {"median":>8s} {"min":>8s} {"max":>8s} {"n":>4s}   cyc(cta0) cyc(cta1)   (ns from CTA 0 seeing the step; median over 8 steps)')
    def key(e):
        return st.median([x[2] for x in rows[e]])
    for e in sorted(rows, key=key):
        r = rows[e]
        f = lambda i: st.median([x[i] for x in r if x[i] is not None]) if any(x[i] is not None for x in r) else float('nan')
        c0 = st.median(cyc[(0, e)]) if (0, e) in cyc else float('nan')
        c1 = st.median(cyc[(1, e)]) if (1, e) in cyc else float('nan')
        print(f'{NAMES.get(e, e):16s} {f(0):8.0f} {f(2):8.0f} {f(3):8.0f} {f(1):8.0f} {r[0][4]:4d}   {c0:9.0f} {c1:9.0f}')
for p in sys.argv[1:]:
    main(p)
