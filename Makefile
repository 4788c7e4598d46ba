# The README's two commands: `make demo` and `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# CPU build of torch, on disk on the project's machines; installed before the project so that
# pip does not pull a CUDA build. The project itself only asks for torch>=2.2.
TORCH ?= torch==2.13.0

.PHONY: demo test docs bench bench-smoke lock clean

# The project with every extra the commands below use, at the versions of constraints.txt (the lock: what CI
# passed with); `make lock` refreshes it. Users of the wheel keep pyproject's ranges.
LOCK := constraints.txt
EXTRAS := test,dask,rl,docs

$(VENV)/.installed: pyproject.toml $(LOCK)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check "$(TORCH)"
	$(PY) -m pip install -q --disable-pip-version-check -c $(LOCK) -e ".[$(EXTRAS)]"
	@touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/bib demo

test: $(VENV)/.installed
	$(PY) -m pytest -q -n 2
	$(PY) -m pytest -q -n 0 -m lifecycle tests/test_lifecycle.py

# The documentation site (docs/, mkdocs.yml): --strict fails on any warning, griffe's included. Never add -q:
# it filters warnings out before strict mode counts them (tests/test_docs_build.py plants one).
MKDOCS_BUILD := mkdocs build --strict

docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/$(MKDOCS_BUILD)

bench: $(VENV)/.installed
	for b in benchmarks/*.py; do $(PY) $$b || exit 1; done

# Every benchmark at tiny sizes (seconds each): CI runs this so that no script rots.
bench-smoke: $(VENV)/.installed
	for b in benchmarks/*.py; do echo "== $$b --smoke"; BIB_NO_PROGRESS=1 $(PY) $$b --smoke || exit 1; done

# Refresh the lock: a fresh venv with torch (as above) and the project's ranges, frozen. Commit constraints.txt
# after `make test` passes with it.
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install -q --disable-pip-version-check "$(TORCH)"
	.lock-venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$(EXTRAS)]"
	{ echo "# The lock: every package of bib-voe[$(EXTRAS)] at the version CI passed with (torch apart: the Makefile's"; \
	  echo "# TORCH). Written by \`make lock\` (pip freeze of a fresh venv); used with pip install -c."; \
	  .lock-venv/bin/python -m pip freeze --exclude-editable | grep -v -i -E '^(torch|bib-voe)(==| @)'; } > $(LOCK).tmp
	mv $(LOCK).tmp $(LOCK)
	rm -rf .lock-venv

clean:
	rm -rf $(VENV) .lock-venv out site .pytest_cache
