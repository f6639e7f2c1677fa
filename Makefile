# `make report` and `make test` each bootstrap .venv on first use.
# `make ... PY=/path/to/python` skips the venv and uses that interpreter as it is
# (for a GPU host whose torch and jax are CUDA builds).
PYTHON3 ?= python3
VENV    := .venv
EXP     ?=
ARGS    ?=

ifeq ($(strip $(PY)),)
PYTHON    := $(VENV)/bin/python
BOOTSTRAP := $(VENV)/.installed
else
PYTHON    := $(PY)
BOOTSTRAP :=
endif

.PHONY: report run test clean

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON3) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $@

report: $(BOOTSTRAP)
	$(PYTHON) -m study run all $(ARGS)
	$(PYTHON) -m study report

run: $(BOOTSTRAP)
	@test -n "$(EXP)" || { echo "error: make run needs EXP=NAME (see: $(PYTHON) -m study list)" >&2; exit 2; }
	$(PYTHON) -m study run $(EXP) $(ARGS)

test: $(BOOTSTRAP)
	$(PYTHON) -m pytest

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
