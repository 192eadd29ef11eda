# Both targets install what they need themselves, on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXPORT_STAMP := $(VENV)/.installed-export

.PHONY: install demo test bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The CPU build of torch first: an unpinned torch pulls a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

# The vendor compiler tests/export runs (sage export --check, docs/export.md): the ascendnpu-ir
# wheel, ~161 MB from PyPI (pip's cache keeps it), CPython 3.11 only: the extra's marker skips it
# elsewhere and those tests skip with the reason.
$(EXPORT_STAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[export]'
	touch $(EXPORT_STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/sage synth --op softmax
	$(BIN)/sage memory inspect

# The summary lists every skipped test with its reason (-rs, pyproject.toml) and how to run
# it (tests/conftest.py): the PostgreSQL tests need SAGE_TEST_POSTGRES_URL (bash .ci/start-postgres).
# Two test processes or more (pytest-xdist, at most 4): a CI machine has 2 cores, and the suite
# run one test at a time took 18-19 of CI's 20 minutes there.
test: $(STAMP) $(EXPORT_STAMP)
	$(BIN)/python -m pytest -n auto --maxprocesses 4

clean:
	rm -rf $(VENV) .pytest_cache
