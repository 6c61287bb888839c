# acl-py: the README's two commands are `make sample` and `make test`. Each sets up what it
# needs on a fresh clone: a virtual environment with the package and its test extra, the cffi
# module generated from bindings/include, and the CPU emulator built into acl_py/_emulator.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
CANN_INCLUDE ?=

.PHONY: all build sample test typecheck test-hardware test-sanitize abi-check bench clean

all: build

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The emulator is built by the `build` target below, in place, not by the install step.
	ACL_PY_NO_EMULATOR=1 $(PY) -m pip install -q -e '.[test]'
	touch $@

# Incremental: both scripts do nothing when their outputs are newer than their inputs (the
# emulator build, about a minute when it runs, reports its progress).
build: $(STAMP)
	@$(PY) bindings/build_ffi.py >/dev/null
	@$(PY) emulator/build.py

sample: build
	@$(PY) samples/layer_norm_backward.py

test: build abi-check typecheck
	$(PY) -m pytest

# Static types: mypy over acl_py (configuration: pyproject.toml, [tool.mypy]).
typecheck: build
	$(PY) -m mypy

# Tests that need real CANN and an Ascend device; elsewhere they are skipped with the reason.
test-hardware: build
	$(PY) -m pytest -m hardware -rs

# The emulator under AddressSanitizer + UBSan, and the test suite run against it.
test-sanitize: build
	$(PY) tools/sanitize.py

# Compiles acl-py's declarations against CANN headers (default: the emulator's own include/).
abi-check: build
	$(PY) tools/abi_check.py $(CANN_INCLUDE)

bench: build
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build dist *.egg-info acl_py/_ffi.py acl_py/_emulator tests/.build .mypy_cache
	find . -name __pycache__ -prune -exec rm -rf {} +
