export PATH=/usr/local/cuda/bin:$PATH
for spec in "64 1024 1024 sm90_128x128s 8" "512 4096 4096 sm90_128x256s 2"; do
set -- $spec
timeout 200 ncu --clock-control none --kernel-name regex:bc_gemm --launch-skip 3 --launch-count 1 --section SourceCounters --section WarpStateStats \
  build/bin/barecuda gemm --m $1 --n $2 --k $3 --iters 5 --check-rows 2 --config $4 --split $5 > $OUT/src_$1.txt 2>&1
echo "== $spec"; sed -n '/Section: Source Counters/,$p' $OUT/src_$1.txt | grep -v "^\s*$" | head -60
done
