#!/bin/bash
# The GPU checks, on a machine with an NVIDIA GPU and Python >= 3.10 + NumPy
# (numba-cuda and CuPy, where present, are compared in the benchmarks).
#
#   make wheel                    # here: the abi3 wheel, LLVM static, in .whl/
#   bash benchmarks/gpu-run.sh    # there, from the checkout's root, .whl/ beside it
#
# Installs the wheel into a private folder (nothing system-wide), runs the
# CUDA tests against it, then the two CUDA benchmarks.  Logs go to $OUT (or
# ./gpu-results) as tests.log, figures.txt, transfer.txt, vectorize.txt,
# guvectorize.txt and gufunc_rows.txt.
set -o pipefail
out=${OUT:-gpu-results}
mkdir -p "$out"
out=$(cd "$out" && pwd)
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl/numbavec-*.whl \
    || { echo "no wheel in .whl/ (run 'make wheel' where LLVM is installed)"; exit 2; }
export PYTHONPATH=$site PYTHONUNBUFFERED=1
# from /: run in the checkout, python3 -c would import its numbavec (no _core)
(cd / && python3 -c "import numbavec.cuda as c; c.detect()") | tee "$out/detect.txt"
# the files that only compile (PTX through ptxas) in parallel where pytest-xdist is
# there; those that use the GPU one at a time (they read the device's free memory)
par=$(python3 -c "import xdist" 2>/dev/null && echo "-n 8")
# each file list runs even when one before it failed; the status is the worst
(cd tests && python3 -m pytest -q -p no:cacheprovider -rs $par cuda/test_cuda_ptx.py cuda/test_cuda_abi.py
    a=$?
    NUMBAVEC_GPU_FIGURES="$out/figures.txt" python3 -m pytest -q -p no:cacheprovider \
        -rs --durations=5 cuda/test_cuda_runtime.py cuda/test_cuda_vectorize.py \
        cuda/test_cuda_interop.py cuda/test_cuda_device.py cuda/test_cuda_gufunc.py
    b=$?
    # the cuda cases of the raise/assert and print() tests
    python3 -m pytest -q -p no:cacheprovider -rs -k cuda compiler/test_raise.py compiler/test_print.py
    c=$?
    exit $(( a > b ? (a > c ? a : c) : (b > c ? b : c) ))) 2>&1 | tee "$out/tests.log"
status=$?
python3 benchmarks/bench_cuda_transfer.py 2>&1 | tee "$out/transfer.txt"
python3 benchmarks/bench_cuda_vectorize.py 2>&1 | tee "$out/vectorize.txt"
python3 benchmarks/bench_cuda_guvectorize.py 2>&1 | tee "$out/guvectorize.txt"
python3 benchmarks/bench_cuda_gufunc_rows.py 2>&1 | tee "$out/gufunc_rows.txt"
exit $status
