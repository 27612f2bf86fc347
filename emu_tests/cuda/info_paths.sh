#!/usr/bin/env bash
# gdak.nic.info_gpu_paths: gdak-info names the path GPU-memory WRITEs take
# (gpu_copies) and the one of WRITEs too large for a batch
# (gpu_large_copies) for each GDAK_CUDA_BATCH / GDAK_CUDA_BIG, and how rings
# in GPU memory are reached (gpu_rings) without and with GDRCopy, against
# the stand-in libcuda (one GPU, no hardware) and libgdrapi; a value the
# table does not allow is named.
#   info_paths.sh GDAK_INFO FAKE_LIBCUDA_DIR FAKE_LIBGDRAPI_DIR
set -uo pipefail
info=$1 fake=$2 gdrfake=$3
fails=0 passes=0
check() { if eval "$2"; then passes=$((passes + 1)); else echo "FAILED: $1"; fails=$((fails + 1)); fi; }
want() { # "ENV..." key text
	key=$2 text=$3
	out=$(env $1 LD_LIBRARY_PATH="$fake" "$info" 2>&1)
	check "[$1] $key says '$text'" 'grep -E "^ +$key +" <<<"$out" | grep -qF -- "$text"'
}
want "GDAK_CUDA_BATCH=copy" gpu_copies "cuMemcpyBatchAsync per pass, no SM (GDAK_CUDA_BATCH=copy)"
want "GDAK_CUDA_BATCH=copy" gpu_large_copies "one cuMemcpyDtoDAsync per WRITE, no SM"
want "GDAK_CUDA_BATCH=copy GDAK_CUDA_BIG=kernel" gpu_large_copies "the wide copy kernel"
want "GDAK_CUDA_BATCH=memop" gpu_large_copies "the wide copy kernel"
want "GDAK_CUDA_BATCH=kernel" gpu_large_copies "needs a free SM slot"
want "GDAK_CUDA_BATCH=memop GDAK_CUDA_BIG=driver" gpu_large_copies "one cuMemcpyDtoDAsync per WRITE"
want "GDAK_CUDA_BATCH=off GDAK_CUDA_BIG=kernel" gpu_large_copies "one cuMemcpyAsync per WQE (GDAK_CUDA_BATCH=off)"
want "" gpu_rings "through the driver: WQE fetches as device-to-host copies"
want "" gdrcopy "not found (libgdrapi.so.2)"
out=$(LD_LIBRARY_PATH="$fake:$gdrfake" "$info" 2>&1)
check "gpu_rings with GDRCopy says the mappings" \
	'grep -E "^ +gpu_rings +" <<<"$out" | grep -qF "through GDRCopy mappings where GDRCopy pins"'
check "gdrcopy with GDRCopy says in use" 'grep -E "^ +gdrcopy +" <<<"$out" | grep -qF "in use:"'
out=$(GDAK_CUDA_GDR=0 LD_LIBRARY_PATH="$fake:$gdrfake" "$info" 2>&1)
check "GDAK_CUDA_GDR=0: gpu_rings through the driver" \
	'grep -E "^ +gpu_rings +" <<<"$out" | grep -qF "through the driver"'
out=$(GDAK_CUDA_BIG=fast LD_LIBRARY_PATH="$fake" "$info" 2>&1)
check "GDAK_CUDA_BIG=fast is named as not allowed" \
	'grep -q "GDAK_CUDA_BIG=.fast. is not allowed: want auto|driver|kernel" <<<"$out"'
echo "info_paths: $passes passed, $fails failed"
[ $fails -eq 0 ]
