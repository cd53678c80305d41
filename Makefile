# The project's commands. `make test` is what CI runs (.ci/run).
#   make test   install missing Debian packages, build, run unit + integration
#               tests, then the same suites under AddressSanitizer+UBSan, then
#               the unit tests and the suites that run the binaries under
#               ThreadSanitizer, then the end-to-end tier against a real control
#               plane (MLD_E2E=0 skips it); fails if a .c/.h file is not
#               clang-formatted
#   make cluster / cluster-down   that control plane in the background, both
#               charts installed as seed 003 does; prints a KUBECONFIG line
#   make e2e    the end-to-end tier alone (E2E_ARGS="-k jobset" to filter)
#   make run    self-signed cert, standalone webhook on https://127.0.0.1:8443,
#               one sample admission printed, serves until Ctrl-C
#   make test-repeat  the release suites REPEAT times (default 3), ctest -j
#               2×cores while a CPU hog spins on every core; lists every test
#               that failed at least once (scripts/test-repeat.sh)
#   make bench  webhook vs a Go net/http peer vs nginx (wrk over TLS); the
#               operator's capture across 1,536 profilers with 10,000 pods cached;
#               500 pod creates through the real kube-apiserver per webhook; the
#               patch's operations and bytes per mutate fixture against the fewest;
#               then the current table of every target (tests/bench/out/summary.md)
#   make fuzz   libFuzzer targets (clang), seeded from fixtures
#   make install  the webhook, the operator and the kubectl plugin
#               (kubectl-mldiag) into $(DESTDIR)$(PREFIX)/bin (PREFIX /usr/local)
#   make manifests  write what repeats the kind table (libk8s/ml/k8s_kinds.c:
#               the charts' RBAC rules and descriptions, the CRD's workloadRef
#               kinds, the fake API server's CRDs, the README's lists; see
#               scripts/kinds.py), then re-render manifests/install/ from the
#               charts with helm (default values, no helm test hooks)
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
# Tests at once: twice the cores. The integration suites mostly wait on the
# product's own timers (at -j 2 a suite kept 0.8 of one core busy); the
# release suites hold at twice the cores with a CPU hog per core (make
# test-repeat). Each suite's wall time halves (release 285 -> 129 s, ASan
# 305 -> 157 s, TSan 297 -> 158 s on 2 cores).
CTEST_JOBS ?= $(shell echo $$((2 * $(JOBS))))
CTEST_ARGS ?= --output-on-failure -j $(CTEST_JOBS)

.PHONY: all deps build install test test-repeat test-release test-asan test-tsan test-e2e e2e cluster cluster-down run bench fuzz \
        format format-check clean manifests images

all: build

deps:
	@scripts/deps.sh test

build:
	@scripts/deps.sh run
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

PREFIX ?= /usr/local
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BUILD)/bin/mldiagnostics-webhook $(BUILD)/bin/mldiagnostics-operator \
	  $(BUILD)/bin/kubectl-mldiag $(DESTDIR)$(PREFIX)/bin/

test: deps format-check test-release test-asan test-tsan test-e2e

# The chart tests run the real helm ($MLD_HELM, else built and cached by
# tests/e2e/build.sh): found once here, so a first build never runs inside a
# test's timeout; when there is none the chart tests fail and say why.
WITH_HELM = MLD_HELM="$$(/usr/bin/python3 tests/tools/charts.py which || echo /helm-not-found)"

test-release:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	$(WITH_HELM) ctest --test-dir $(BUILD) $(CTEST_ARGS)

test-asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSANITIZE=address,undefined >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	$(WITH_HELM) ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --test-dir $(ASAN_BUILD) $(CTEST_ARGS)

# ThreadSanitizer: any report fails its test (the process stops at the first,
# the harness fails a test whose binary logged one); tests/tsan.supp holds
# third-party suppressions only. tests/CMakeLists.txt leaves out the suites
# that run none of our binaries.
# history_size=7: the longest access history, so the earlier access of a
# race keeps its stack and tests/tsan.supp's jansson entries can match it (with
# the default, test_k8s_store's churn sometimes reported jansson's immortal-value
# read as "[failed to restore the stack]": 1 run in 25 with the cores busy,
# none in 90 with history_size=7)
TSAN_OPTIONS_ALL = halt_on_error=1:second_deadlock_stack=1:history_size=7:suppressions=$(CURDIR)/tests/tsan.supp

test-tsan:
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSANITIZE=thread >/dev/null
	cmake --build $(TSAN_BUILD) -j $(JOBS)
	$(WITH_HELM) TSAN_OPTIONS=$(TSAN_OPTIONS_ALL) ctest --test-dir $(TSAN_BUILD) $(CTEST_ARGS)

REPEAT ?= 3
test-repeat: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	@$(WITH_HELM) scripts/test-repeat.sh $(BUILD) $(REPEAT)

# The end-to-end tier builds the images from the Dockerfile (scripts/images.sh)
# and runs them on its real node; the offline `inject` test runs $(BUILD)'s.
test-e2e:
	@tests/e2e/run.sh $(E2E_ARGS)

e2e: build
	@tests/e2e/run.sh $(E2E_ARGS)

# Both images from the Dockerfile, daemonless (buildah), with their sizes;
# IMAGES_ARGS="--push REGISTRY/PATH" pushes them (scripts/images.sh).
images:
	@scripts/deps.sh images
	@scripts/images.sh $(IMAGES_ARGS)

cluster: build
	@tests/e2e/cluster.sh up

cluster-down:
	@tests/e2e/cluster.sh down

run: build
	@scripts/run.sh $(BUILD)/bin

bench:
	@scripts/deps.sh bench
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	tests/bench/run.sh $(BUILD)/bin
	/usr/bin/python3 tests/bench/operator_bench.py $(BUILD)/bin
	tests/e2e/build.sh >/dev/null && MLD_BIN_DIR=$(CURDIR)/$(BUILD)/bin \
	  $$(tests/e2e/venv.sh) -B tests/e2e/bench_apiserver.py --report tests/bench/out/apiserver.md
	/usr/bin/python3 -B tests/bench/patch_size.py tests/bench/out
	/usr/bin/python3 -B tests/bench/summary.py tests/bench/out

fuzz:
	@scripts/deps.sh fuzz
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DMLD_FUZZ=ON -DMLD_TESTS=OFF >/dev/null
	cmake --build build-fuzz -j $(JOBS)
	tests/fuzz/run.sh build-fuzz/bin $${FUZZ_SECONDS:-60}

# helm template --namespace gke-mldiagnostics --skip-tests, with the helm of
# the chart tests (tests/tools/charts.py: $MLD_HELM, else tests/e2e/build.sh's)
manifests: build
	$(BUILD)/tests/kinds_json | /usr/bin/python3 scripts/kinds.py -
	/usr/bin/python3 tests/tools/charts.py manifests

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) build-fuzz
