# The two commands of the README: `make run` and `make test`.  Everything else helps them.
SHELL := /bin/bash
JOBS  ?= $(shell nproc)

.PHONY: all deps build asan run test bench fuzz chaos clean

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@cmake -S . -B build/rel -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build/rel -j$(JOBS)

asan: deps
	@cmake -S . -B build/asan -DFLEETD_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build build/asan -j$(JOBS)

run: build
	@bash scripts/run.sh

test: asan
	@bash tests/run.sh build/asan

bench: build
	@bash bench/http.sh

fuzz: deps
	@bash tests/fuzz/run.sh 300

chaos: build
	@bash tests/chaos/run.sh

clean:
	rm -rf build
