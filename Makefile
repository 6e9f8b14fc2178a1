# sparkfleet: the two commands a new user needs are `make lab` and `make test`.
SHELL := /bin/bash
.ONESHELL:
.SHELLFLAGS := -eu -o pipefail -c
VENV := $(CURDIR)/.venv
export PATH := $(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
LAB_NODES ?= 3
export LAB_NODES
# MITOGEN=1: run Ansible with the mitogen strategy (faster no-op runs); default is the stock strategy.
ifeq ($(MITOGEN),1)
export ANSIBLE_STRATEGY_PLUGINS := $(wildcard $(VENV)/lib/python3*/site-packages/ansible_mitogen/plugins/strategy)
export ANSIBLE_STRATEGY := mitogen_linear
export ANSIBLE_HOST_KEY_CHECKING := False
endif

.PHONY: help deps lab lab-up lab-down converge lint unit molecule test bench drift validate

help:
	@echo "make lab        build the lab ($(LAB_NODES) nodes) and run site.yml on it"
	@echo "make test       linters, unit tests, molecule scenarios on lab containers (ROLE=firewall or SCENARIO=default: one)"
	@echo "make lab-down   remove the lab completely"
	@echo "make bench      benchmark (2, 3 and 8 nodes, medians of 3): converge, no-op, check, drift, floor"
	@echo "make drift      drift check of the lab (reports in reports/drift/)"
	@echo "make validate   validation report of the lab (reports/validate/)"

deps:
	@scripts/bootstrap.sh

lab-up: deps
	python3 lab/lab.py up

converge:
	ansible-playbook site.yml

lab: lab-up converge

lab-down:
	python3 lab/lab.py down

lint: deps
	ruff check .
	yamllint -s .
	ansible-lint --profile production --offline

unit: deps
	pytest -q tests/unit

# The GPU lock (vLLM, Python 3.12) installs on DGX OS 7 aarch64: uv resolves it there with every hash required (a
# dry run: nothing downloaded), and every pin has a wheel for that platform on the index with a locked sha256.
GPU_LOCK = roles/python_env/files/python-env-gpu.lock
lock-check: deps
	uv pip install --dry-run --quiet --python-platform aarch64-manylinux_2_28 --python-version 3.12 --require-hashes \
		--target "$$(mktemp -d)" -r $(GPU_LOCK)
	python3 -m sparkfleet_tools.wheels verify --lock $(GPU_LOCK) --python 3.12 --arch aarch64 >/dev/null

# SCENARIO=fabric or ROLE=firewall runs one scenario (molecule/<name>/); default: every scenario, role scenarios
# first on their shared lab, then the integration scenarios, with a table of the time each took.
molecule: deps
	python3 scripts/molecule_all.py $(SCENARIO) $(ROLE)

# Linters and unit tests first when one scenario runs; with all of them, at the end of the first lane (after default;
# the second starts with arm64, the longest run: scripts/molecule_all.py).
test: deps
	python3 scripts/molecule_all.py --checks $(SCENARIO) $(ROLE)

bench: deps
	python3 scripts/bench.py

drift: deps
	python3 -m sparkfleet_tools.drift --inventory inventory/lab --out reports/drift

validate: deps
	ansible-playbook playbooks/validate.yml
