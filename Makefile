# The two commands a fresh machine needs are `make demo` and `make test`; see README.md.
# Every target runs scripts/bootstrap first, which is quick when nothing is missing.
SHELL := /bin/bash
BUILD ?= build
ASAN_BUILD ?= build-asan
PY := .venv/bin/python
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: all bootstrap build test unit e2e demo bench test-asan format clean
all: build

bootstrap:
	@scripts/bootstrap

build: bootstrap
	@cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD)

# Unit tests (gtest, through ctest) and end-to-end tests (pytest, through the real binary).
test: build
	@$(MAKE) --no-print-directory unit e2e

unit:
	cd $(BUILD) && ctest --output-on-failure -j2

e2e:
	$(PY) -m pytest tests/e2e -q

demo: build
	@scripts/demo

bench: build
	BENCH_ONLY="$(BENCH_ONLY)" BENCH_SCALE="$(BENCH_SCALE)" $(PY) bench/run.py

# Unit and end-to-end tests under AddressSanitizer and UndefinedBehaviorSanitizer, in their own
# build folder: the e2e suite drives the sanitized binary (and its worker processes).
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test-asan: bootstrap
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD)
	cd $(ASAN_BUILD) && $(ASAN_ENV) ctest --output-on-failure -j2
	$(ASAN_ENV) SLUICE_E2E_BINARY=$(CURDIR)/$(ASAN_BUILD)/sluice $(PY) -m pytest tests/e2e -q

format:
	clang-format -i $$(git ls-files '*.h' '*.cc' '*.hpp' '*.cpp')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
