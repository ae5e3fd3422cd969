# Shortcuts for development; the README has the commands spelled out.
PYTHON ?= python3
C_FILES = $(wildcard src/*.c src/*/*.c src/*/*/*.c src/*/*/*/*.c src/*/*.cpp src/*.h src/*/*.h src/*/*/*.h src/*/*/*/*.h)
SAN_PRELOAD = $(shell gcc -print-file-name=libasan.so) $(shell gcc -print-file-name=libubsan.so)

.PHONY: inplace test asan format format-check bench readme-plot ci wheel wheel-local

inplace:                 # fast in-place build, libLLVM linked dynamically
	NUMBAVEC_LLVM_SHARED=1 $(PYTHON) setup.py -q build_ext --inplace

test: inplace
	$(PYTHON) -m pytest -q tests

asan:                    # in-place sanitizer build, then the tests under ASan + UBSan
	NUMBAVEC_DEBUG=1 NUMBAVEC_LLVM_SHARED=1 $(PYTHON) setup.py -q build_ext --inplace --force
	LD_PRELOAD="$(SAN_PRELOAD)" ASAN_OPTIONS=detect_leaks=0 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 PYTHONMALLOC=malloc \
	    $(PYTHON) -m pytest -q tests

format:
	clang-format -i $(C_FILES)

format-check:
	clang-format --dry-run $(C_FILES)

bench: inplace
	PYTHONPATH=. $(PYTHON) benchmarks/bench_vectorize.py

readme-plot: inplace     # the README's picture, docs/speedup.svg: a bench_vectorize run, drawn
	PYTHONPATH=. $(PYTHON) benchmarks/bench_vectorize.py --json benchmarks/results/readme.json
	$(PYTHON) benchmarks/plot.py --readme docs/speedup.svg benchmarks/results/readme.json

ci:                      # what CI runs: install, then test the installed package
	bash .ci/run

wheel:                   # the portable release wheel (abi3, manylinux_2_28, LLVM linked in) in .whl/
	PYTHON=$(PYTHON) bash tools/manylinux-wheel .whl

wheel-local:             # a wheel for this machine's glibc only (quicker: no zig, no auditwheel)
	$(PYTHON) -m pip wheel -q --no-deps --no-build-isolation -w .whl .
