# Thin wrapper: install missing Debian packages, configure with the CMake preset, build, run.
#   make demo   all_reduce_perf on 4 ranks of the default emulated topology (trn1.32xlarge)
#   make test   the whole suite through CTest
#   make fault       the fault tests only (real processes killed, stopped, flooded; label fault)
#   make asan-test   unit + in-process suites under ASan+UBSan (build-asan; CI runs it after `test`)
#   make tsan-test   the same under ThreadSanitizer (build-tsan)
#   make fuzz        every libFuzzer target for TRNCCL_FUZZ_SECONDS (60) each (build-fuzz, clang)
#   make format-check   fail when a C/C++ file differs from clang-format or has over 450 lines
#                       (CI runs it first)
#   make format         rewrite them with clang-format
#   make arch-graph     regenerate docs/layers.svg (the layer picture) from the CMake targets
BUILD   ?= build
JOBS    ?= $(shell nproc)
CTEST_J ?= 2

.PHONY: all deps configure build demo test fault asan-test tsan-test fuzz format format-check arch-graph clean

all: build

deps:
	@bash scripts/deps.sh

configure: deps
	@cmake --preset default >/dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

demo: build
	TRNCCL_SOCKET_IFNAME=lo $(BUILD)/perf/all_reduce_perf -b 8 -e 64M -f 4 -g 4

test: build
	# Loopback only: without this the TCP transport and the bootstrap would pick eth0.
	TRNCCL_SOCKET_IFNAME=lo ctest --test-dir $(BUILD) --output-on-failure -j$(CTEST_J) --timeout 600 -LE long

# The long sweep: every collective x type x op x rank count with 1M+3 elements (issue 3).
test-long: build
	TRNCCL_SOCKET_IFNAME=lo ctest --test-dir $(BUILD) --output-on-failure -L long

fault: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(CTEST_J) -L fault

# Sanitizer runs: halt on the first report so a finding fails its test.
asan-test: deps
	@cmake --preset asan >/dev/null
	@cmake --build build-asan -j$(JOBS) --target trnccl_unit_suite
	TRNCCL_SOCKET_IFNAME=lo ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --preset asan -j$(CTEST_J)

tsan-test: deps
	@cmake --preset tsan >/dev/null
	@cmake --build build-tsan -j$(JOBS) --target trnccl_unit_suite
	TRNCCL_SOCKET_IFNAME=lo TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --preset tsan -j$(CTEST_J)

fuzz:
	@bash scripts/deps.sh fuzz
	@cmake --preset fuzz >/dev/null
	@cmake --build build-fuzz -j$(JOBS) --target trnccl_fuzzers
	ctest --preset fuzz -j$(CTEST_J)

format-check: deps
	@bash scripts/check-format.sh

format: deps
	@bash scripts/check-format.sh --fix

arch-graph: deps
	@bash scripts/arch-graph.sh

clean:
	rm -rf $(BUILD)
