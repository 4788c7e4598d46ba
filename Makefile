# The README's two commands: `make demo` and `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# CPU build of torch, on disk on the project's machines; installed before the project so that
# pip does not pull a CUDA build. The project itself only asks for torch>=2.2.
TORCH ?= torch==2.13.0

.PHONY: demo test docs bench clean

$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check "$(TORCH)"
	$(PY) -m pip install -q --disable-pip-version-check -e ".[test,dask,rl]"
	@touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/bib demo

test: $(VENV)/.installed
	$(PY) -m pytest -q -n 2
	$(PY) -m pytest -q -n 0 -m lifecycle tests/test_lifecycle.py

# The documentation site (docs/, mkdocs.yml) with the docs extra; --strict fails on any warning.
$(VENV)/.docs-installed: $(VENV)/.installed
	$(PY) -m pip install -q --disable-pip-version-check -e ".[docs]"
	@touch $@

docs: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict -q

bench: $(VENV)/.installed
	for b in benchmarks/*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) out site .pytest_cache
