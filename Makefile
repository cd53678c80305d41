# The project's commands. `make test` is what CI runs (.ci/run).
#   make test   install missing Debian packages, build, run unit + integration
#               tests, then the same suites under AddressSanitizer+UBSan;
#               fails if a .c/.h file is not clang-formatted (make format)
#   make run    self-signed cert, standalone webhook on https://127.0.0.1:8443,
#               one sample admission printed, serves until Ctrl-C
#   make bench  webhook vs a Go net/http peer vs nginx (wrk over TLS); the
#               operator's capture across 1,536 profilers with 10,000 pods cached
#   make fuzz   libFuzzer targets (clang), seeded from fixtures
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
CTEST_ARGS ?= --output-on-failure -j $(JOBS)

.PHONY: all deps build test test-release test-asan run bench fuzz format format-check clean

all: build

deps:
	@scripts/deps.sh test

build:
	@scripts/deps.sh run
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

test: deps format-check test-release test-asan

test-release:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	ctest --test-dir $(BUILD) $(CTEST_ARGS)

test-asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSANITIZE=address,undefined >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) $(CTEST_ARGS)

run: build
	@scripts/run.sh $(BUILD)/bin

bench:
	@scripts/deps.sh bench
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	tests/bench/run.sh $(BUILD)/bin
	/usr/bin/python3 tests/bench/operator_bench.py $(BUILD)/bin

fuzz:
	@scripts/deps.sh fuzz
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DMLD_FUZZ=ON -DMLD_TESTS=OFF >/dev/null
	cmake --build build-fuzz -j $(JOBS)
	tests/fuzz/run.sh build-fuzz/bin $${FUZZ_SECONDS:-60}

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
