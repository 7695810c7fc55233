#!/bin/bash
# Profiles one GEMM launch with Nsight Compute (clocks left as they run:
# --clock-control none) for each "MxNxK[:config[:split[:gemm flags]]]"
# argument (e.g. 531x976x4544:sm90_128x128::--beta 1), and cuBLAS (PyTorch)
# on the shapes in $CUBLAS (CUBLAS_C=1: addmm with a C; CUBLAS_F32=1: mm with
# an f32 output, whose cuBLASLt kernel is named Kernel2); summaries printed,
# reports to $OUT/prof.tgz. SOURCE=1 also collects our launches' source
# counters and prints where their instructions and stalls go by region of
# the SASS (tools/device/ncu_regions.py; the source page's CSV is kept).
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
L=$(mktemp -d)
SECTIONS="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis"
METRICS="--metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,dram__bytes.sum,lts__t_bytes.sum,gpu__time_duration.sum"
summ() { grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|hmma_cycles_active|dram__bytes|lts__t_bytes|Grid Size|Cluster Size|Active Clusters|Achieved Occupancy|Waves Per SM|Warp Cycles Per Issued|spends [0-9.]+ cycles|gemm " "$1" | grep -v "^==PROF==" | head -40; }
for arg in "$@"; do
  IFS=: read shape c sp fl <<< "$arg"
  cfg=""; [ -n "$c" ] && cfg="--config $c"; [ -n "$sp" ] && cfg="$cfg --split $sp"; cfg="$cfg $fl"
  IFS=x read m n k <<< "$shape"
  f="$L/ncu_${shape}_${c}_${sp}_${fl//[^a-z0-9]/}.txt"
  src=""; [ "${SOURCE:-0}" = 1 ] && src="--section SourceCounters --export ${f%.txt}.ncu-rep"
  timeout 200 ncu --clock-control none --kernel-name regex:bc_gemm --launch-skip 3 --launch-count 1 $SECTIONS $METRICS $src \
    build/bin/barecuda gemm --m $m --n $n --k $k --iters 5 --check-rows 2 $cfg > "$f" 2>&1
  echo "== ours $arg"; summ "$f"
  if [ -n "$src" ]; then
    # with --export the sections go to the report, not to stdout: print them from it for the summary
    ncu --import "${f%.txt}.ncu-rep" --page details >> "$f" 2>&1
    echo "== ours $arg (sections)"; summ "$f"
    ncu --import "${f%.txt}.ncu-rep" --page source --csv --print-source sass > "${f%.txt}_src.csv" 2>&1
    python3 tools/device/ncu_regions.py "${f%.txt}_src.csv" && rm -f "${f%.txt}.ncu-rep"
  fi
done
for s in ${CUBLAS:-}; do
  IFS=x read m n k <<< "$s"
  f="$L/ncu_cublas_$s.txt"
  timeout 200 ncu --clock-control none --kernel-name regex:'gemm|xmma|sm90|^Kernel2$' --launch-skip 3 --launch-count 1 $SECTIONS $METRICS \
    python3 -c "
import torch
a=torch.randn($m,$k,device='cuda',dtype=torch.bfloat16); b=torch.randn($n,$k,device='cuda',dtype=torch.bfloat16)
c0=torch.randn($m,$n,device='cuda',dtype=torch.bfloat16)
for i in range(6): c=torch.addmm(c0,a,b.t()) if ${CUBLAS_C:-0} else torch.mm(a,b.t(),out_dtype=torch.float32) if ${CUBLAS_F32:-0} else torch.mm(a,b.t())
torch.cuda.synchronize()" > "$f" 2>&1
  echo "== cuBLAS $s"; summ "$f"
done
tar czf "$OUT/prof.tgz" -C "$L" .
