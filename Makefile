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

# Zero-point atlas under other torch releases (not part of `make report` or CI): one extra venv
# per release, same jax and numpy pins, results land beside the pinned run's.
MATRIX_TORCH ?= 2.14.1
.PHONY: matrix
matrix: $(BOOTSTRAP)
	@for v in $(MATRIX_TORCH); do \
	  env=.matrix/torch-$$v; \
	  if [ ! -f $$env/.installed ]; then \
	    $(PYTHON3) -m venv $$env && mkdir -p .matrix && \
	    grep -v '^torch==' constraints.txt > .matrix/constraints-$$v.txt && \
	    $$env/bin/python -m pip install --quiet -c .matrix/constraints-$$v.txt "torch==$$v" \
	      jax jaxlib numpy ml_dtypes tabulate && touch $$env/.installed || exit 1; \
	  fi; \
	  $$env/bin/python -m study run zero_point two_layer --device cpu $(ARGS) || exit 1; \
	done
	$(PYTHON) -m study report
