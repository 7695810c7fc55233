#!/usr/bin/env python3
"""Regenerates the fuzz seed corpus (tests/fuzz/corpus/).

The real build/kernels.fatbin is megabytes (the GEMM cubins), too big to
commit; `ninja fuzz-replay` replays it from build/ instead. The committed
seeds are small fatbins written by the same CUDA 13.0 `ptxas` + `fatbinary`
over a one-instruction kernel, with the build's exact layout (sm_90a, sm_100a,
sm_100f, sm_103a, sm_110a; 64- and 112-byte entry headers), plus the other
shapes the parser must know (PTX, identifiers, options, ZSTD compression,
plain and family targets, two containers), and truncated and mutated copies.

usage: tests/fuzz/make_corpus.py [CUDA_HOME]   (default /usr/local/cuda)
"""
import os
import struct
import subprocess
import sys
import tempfile

CUDA = sys.argv[1] if len(sys.argv) > 1 else "/usr/local/cuda"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")

PTX = """.version {ver}
.target {target}
.address_size 64
.visible .entry k(.param .u64 p)
{{
  ret;
}}
"""


def run(*args):
    subprocess.run(args, check=True)


def cubin(tmp, sm):
    ver = "9.0" if sm.startswith("110") or sm == "120f" else "8.8"
    ptx = os.path.join(tmp, f"k_{sm}.ptx")
    with open(ptx, "w") as f:
        f.write(PTX.format(ver=ver, target=f"sm_{sm}"))
    out = os.path.join(tmp, f"k_{sm}.cubin")
    run(f"{CUDA}/bin/ptxas", f"-arch=sm_{sm}", ptx, "-o", out)
    return ptx, out


def fatbin(tmp, name, images, *extra):
    out = os.path.join(tmp, name)
    args = [f"{CUDA}/bin/fatbinary", "-64", f"--create={out}"] + list(extra)
    for kind, sm, path in images:
        args.append(f"--image3=kind={kind},sm={sm},file={path}")
    run(*args)
    with open(out, "rb") as f:
        return f.read()


def entries(buf):
    """(offset, header size, payload size) of each entry of a one-container fatbin."""
    res, p = [], 16
    while p < len(buf):
        hs, ps = struct.unpack_from("<IQ", buf, p + 4)
        res.append((p, hs, ps))
        p += hs + ps
    return res


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {}
    with tempfile.TemporaryDirectory() as tmp:
        c = {sm: cubin(tmp, sm) for sm in
             ["90a", "100a", "100f", "103a", "110a", "80", "86", "90", "120", "120f", "110f"]}
        mini = fatbin(tmp, "mini.fatbin", [("elf", sm, c[sm][1]) for sm in
                                            ["90a", "100a", "100f", "103a", "110a"]], "--compress=false")
        seeds["mini_build_layout.fatbin"] = mini
        seeds["ptx_elf_ident.fatbin"] = fatbin(
            tmp, "p.fatbin", [("ptx", "90a", c["90a"][0]), ("elf", "90a", c["90a"][1])],
            "--cmdline=-O3", "--ident=seed_ident")
        seeds["compressed.fatbin"] = fatbin(
            tmp, "z.fatbin", [("elf", "100a", c["100a"][1]), ("elf", "90", c["90"][1])], "--compress-all")
        seeds["plain_and_family.fatbin"] = fatbin(
            tmp, "m.fatbin", [("elf", sm, c[sm][1]) for sm in ["80", "86", "90", "120", "120f", "110f"]] +
            [("ptx", "80", c["80"][0])], "--compress=false")
        # nvcc's own fatbins: 72/120/128-byte headers, debug flag, compressed PTX
        cu = os.path.join(tmp, "t.cu")
        with open(cu, "w") as f:
            f.write('extern "C" __global__ void k(int *p) { p[threadIdx.x] = threadIdx.x; }\n')
        for name, args in [("nvcc_mixed.fatbin", ["-gencode", "arch=compute_90a,code=[sm_90a,compute_90a]",
                                                  "-gencode", "arch=compute_80,code=sm_80", "-lineinfo"]),
                           ("nvcc_debug_sm100a.fatbin", ["-G", "-gencode",
                                                         "arch=compute_100a,code=[sm_100a,compute_100a]"])]:
            out = os.path.join(tmp, name)
            run(f"{CUDA}/bin/nvcc", "-fatbin", *args, cu, "-o", out)
            with open(out, "rb") as f:
                seeds[name] = f.read()
    seeds["two_containers.fatbin"] = seeds["ptx_elf_ident.fatbin"] + mini

    ents = entries(mini)
    cut = ents[2][0]  # after two entries, with fatSize rewritten: a valid shorter container
    b = bytearray(mini[:cut])
    struct.pack_into("<Q", b, 8, cut - 16)
    seeds["cut_at_entry_boundary.fatbin"] = bytes(b)
    seeds["trunc_mid_entry.bin"] = mini[: ents[1][0] + ents[1][1] + 100]
    seeds["trunc_mid_header.bin"] = mini[: ents[3][0] + 40]
    b = bytearray(mini)
    struct.pack_into("<Q", b, ents[1][0] + 8, ents[1][2] - 8)  # entry 2 starts inside entry 1
    seeds["mut_overlap.bin"] = bytes(b)
    b = bytearray(mini)
    struct.pack_into("<Q", b, ents[0][0] + 8, (1 << 64) - ents[0][1])  # size wraps to itself
    seeds["mut_wrapping_size.bin"] = bytes(b)
    b = bytearray(mini)
    struct.pack_into("<I", b, 0, 0x1EE55A01)
    seeds["mut_old_magic.bin"] = bytes(b)
    b = bytearray(mini)
    struct.pack_into("<Q", b, ents[4][0] + 0x28, 0x1300011)  # both a and f
    seeds["mut_a_and_f.bin"] = bytes(b)
    b = bytearray(mini)
    struct.pack_into("<I", b, ents[1][0] + 0x10, 16)  # compressed size, no flag
    seeds["mut_compressed_size.bin"] = bytes(b)
    seeds["empty_container.bin"] = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 0)

    for name in os.listdir(OUT):
        os.remove(os.path.join(OUT, name))
    for name, data in sorted(seeds.items()):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"{len(seeds)} seeds, {sum(map(len, seeds.values()))} bytes in {OUT}")


if __name__ == "__main__":
    main()
