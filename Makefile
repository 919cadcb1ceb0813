# The two commands a newcomer needs:
#   make demo   install what is missing, build, run the demo server on 127.0.0.1:6060
#   make test   install what is missing (test tools too), build, run every test
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build deps test-deps demo test sanitized clean

all: build

deps:
	@scripts/install-deps.sh build

test-deps:
	@scripts/install-deps.sh test

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

demo: build
	@$(BUILD)/examples/demo_server $(if $(DEMO_SECONDS),--seconds $(DEMO_SECONDS))

# The unit tests also run under AddressSanitizer+UndefinedBehaviorSanitizer
# and under ThreadSanitizer, each in a build of its own; then the whole suite
# runs on the normal build, so the last line is the whole suite's verdict.
test: test-deps build
	@$(MAKE) -s sanitized SAN=address,undefined DIR=$(BUILD)-asan
	@$(MAKE) -s sanitized SAN=thread DIR=$(BUILD)-tsan
	@echo "== all tests"
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

sanitized:
	@echo "== unit tests under -fsanitize=$(SAN)"
	@cmake -S . -B $(DIR) -DCPROF_SANITIZE=$(SAN) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(DIR) -j $(JOBS) -- --no-print-directory >/dev/null
	@cd $(DIR) && ctest -L unit --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan
