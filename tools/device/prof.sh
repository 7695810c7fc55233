#!/bin/bash
# Profile one config against another at one shape (ncu sections to $OUT).
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
M=${M:-4096} N=${N:-4096} K=${K:-4096}
for cfg in "$@"; do
  timeout 60 build/bin/barecuda gemm --m $M --n $N --k $K --iters 30 --check-rows 8 --config $cfg
  timeout 200 ncu --launch-skip 3 --launch-count 1 --section SpeedOfLight --section LaunchStats \
     --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
     build/bin/barecuda gemm --m $M --n $N --k $K --iters 1 --check-rows 1 --config $cfg > "$OUT/ncu_$cfg.txt" 2>&1
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Waves Per SM|Cluster|Registers|Achieved Occupancy|Stall|Warp Cycles Per Issued|Block Limit" "$OUT/ncu_$cfg.txt" | head -30
done
