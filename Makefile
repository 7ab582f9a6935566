# Thin wrapper: install missing Debian packages, configure with the CMake preset, build, run.
#   make demo   all_reduce_perf on 4 ranks of the default emulated topology (trn1.32xlarge)
#   make test   the whole suite through CTest
BUILD   ?= build
JOBS    ?= $(shell nproc)
CTEST_J ?= 2

.PHONY: all deps configure build demo test clean

all: build

deps:
	@bash scripts/deps.sh

configure: deps
	@cmake --preset default >/dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

demo: build
	$(BUILD)/perf/all_reduce_perf -b 8 -e 64M -f 4 -g 4

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(CTEST_J) --timeout 600

clean:
	rm -rf $(BUILD)
