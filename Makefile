# The two commands a newcomer needs:
#   make demo   install what is missing, build, run the demo server on 127.0.0.1:6060
#   make test   install what is missing (test tools too), build, run every test
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build deps test-deps demo test sanitized fuzz-build fuzz-test fuzz fuzz-merge test-arm64 deb deb-amd64 deb-arm64 clean

all: build

deps:
	@scripts/install-deps.sh build

test-deps:
	@scripts/install-deps.sh test
	@scripts/install-deps.sh arm64
	@scripts/install-deps.sh deb-arm64

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

demo: build
	@$(BUILD)/examples/demo_server $(if $(DEMO_SECONDS),--seconds $(DEMO_SECONDS))

# The unit tests also run under AddressSanitizer+UndefinedBehaviorSanitizer
# and under ThreadSanitizer, each in a build of its own, and the library
# cross-built for aarch64 under qemu (test-arm64); then the whole suite runs
# on the normal build, so the last line is the whole suite's verdict.
test: test-deps build
	@$(MAKE) -s sanitized SAN=address,undefined DIR=$(BUILD)-asan
	@$(MAKE) -s sanitized SAN=thread DIR=$(BUILD)-tsan
	@$(MAKE) -s fuzz-test
	@$(MAKE) -s test-arm64
	@echo "== all tests"
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

sanitized:
	@echo "== unit tests under -fsanitize=$(SAN)"
	@cmake -S . -B $(DIR) -DCPROF_SANITIZE=$(SAN) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(DIR) -j $(JOBS) -- --no-print-directory >/dev/null
	@cd $(DIR) && ctest -L unit --output-on-failure -j $(JOBS)

# The libFuzzer targets of tests/fuzz, built with clang in a tree of their
# own. fuzz-test: the short ctest run (label fuzz, part of make test);
# fuzz: every target FUZZ_SECONDS from its corpus, new inputs kept in
# $(BUILD)-fuzz/fuzz-out; fuzz-merge: adds the ones that add coverage to
# tests/fuzz/corpus. FUZZ=NAME (or "a b") for some targets only.
FUZZ_SECONDS ?= 300
FUZZ ?=
fuzz-build: test-deps
	@cmake -S . -B $(BUILD)-fuzz -DCMAKE_C_COMPILER=clang -DCPROF_FUZZ=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD)-fuzz -j $(JOBS) -- --no-print-directory >/dev/null

fuzz-test: fuzz-build
	@echo "== fuzz targets, a short run each"
	@cd $(BUILD)-fuzz && ctest -L fuzz --output-on-failure -j $(JOBS)

fuzz: fuzz-build
	@scripts/fuzz.sh --build $(BUILD)-fuzz --seconds $(FUZZ_SECONDS) $(FUZZ)

fuzz-merge: fuzz-build
	@scripts/fuzz.sh --build $(BUILD)-fuzz --merge $(FUZZ)

# The library cross-built for aarch64 (cmake/aarch64-linux-gnu.cmake), its
# unit tests and the tests of tests/arm64, run under qemu-aarch64: the
# host's curl and go tool pprof drive the aarch64 programs. doc/building.md.
test-arm64:
	@scripts/install-deps.sh arm64
	@echo "== arm64: the library and its tests, cross-built, under qemu-aarch64"
	@cmake -S . -B $(BUILD)-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
	  -DCPROF_LIB_ONLY=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD)-arm64 -j $(JOBS) -- --no-print-directory >/dev/null
	@cd $(BUILD)-arm64 && ctest --output-on-failure -j $(JOBS)

# The Debian packages (debian/), for both architectures: deb-amd64 builds
# libcprof0, libcprof-dev and cprof with dpkg-buildpackage from a clean copy
# of the tree in $(DEB_DIR)/cprof-VERSION, then reads them with lintian;
# deb-arm64 cross-builds the same three (dpkg-buildpackage -a arm64
# -Pcross,nocheck). The .debs are left in $(DEB_DIR);
# doc/building.md, "Debian packages".
DEB_DIR ?= $(BUILD)/deb
deb: deb-amd64 deb-arm64

deb-amd64:
	@scripts/install-deps.sh deb
	@scripts/deb.sh --out $(DEB_DIR)

deb-arm64:
	@scripts/install-deps.sh deb-arm64
	@scripts/deb.sh --out $(DEB_DIR) --arch arm64

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-fuzz $(BUILD)-arm64
