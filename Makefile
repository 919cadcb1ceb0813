# The two commands a newcomer needs:
#   make demo   install what is missing, build, run the demo server on 127.0.0.1:6060
#   make test   install what is missing (test tools too), build, run every test
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build deps test-deps demo test clean

all: build

deps:
	@scripts/install-deps.sh build

test-deps:
	@scripts/install-deps.sh test

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@$(BUILD)/examples/demo_server $(if $(DEMO_SECONDS),--seconds $(DEMO_SECONDS))

test: test-deps build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD)
