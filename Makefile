# The two commands of the README: `make run` and `make test`.  Everything else helps them.
SHELL := /bin/bash
JOBS  ?= $(shell nproc)

.PHONY: all deps build asan run test bench fuzz chaos clean provider provider-docs

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

# terraform-provider-fleet into a local filesystem mirror (build/tf-mirror), with a CLI config
provider: build
	@bash terraform/provider/install.sh build/rel build/tf-mirror

# docs/ (registry layout) from the provider's schema and the examples in gendocs.py
provider-docs: build
	@python3 terraform/provider/gendocs.py build/rel docs

clean:
	rm -rf build
