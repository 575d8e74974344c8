# One entry point for checks; .ci/run and the README use these targets.
PYTHON ?= python3

.PHONY: install lint type test check

install:
	$(PYTHON) -m pip install -e '.[dev]'

lint:
	$(PYTHON) -m ruff check localjudge tests benchmarks
	$(PYTHON) -m ruff format --check localjudge tests benchmarks

type:
	$(PYTHON) -m mypy

test:
	$(PYTHON) -m pytest

check: lint type test
