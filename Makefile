# `make report` and `make test` each bootstrap .venv on first use.
# `make ... PY=/path/to/python` skips the venv and uses that interpreter as it is
# (for a GPU host whose torch and jax are CUDA builds); a missing package is named at once.
PYTHON3 ?= python3
VENV    := .venv
EXP     ?=
ARGS    ?=

ifeq ($(strip $(PY)),)
PYTHON    := $(VENV)/bin/python
BOOTSTRAP := $(VENV)/.installed
LINT      := $(PYTHON) -m ruff check .
else
PYTHON    := $(PY)
BOOTSTRAP :=
LINT      := if $(PYTHON) -m ruff --version >/dev/null 2>&1; then $(PYTHON) -m ruff check .; \
             else echo "make test: $(PYTHON) has no ruff: lint skipped" >&2; fi
endif

.PHONY: report run test reference clean matrix

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON3) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $@

report: $(BOOTSTRAP)
	$(PYTHON) -m study run all --jobs 2 --report $(ARGS)

run: $(BOOTSTRAP)
	@test -n "$(EXP)" || { echo "error: make run needs EXP=NAME (see: $(PYTHON) -m study list)" >&2; exit 2; }
	$(PYTHON) -m study run $(EXP) $(ARGS)

# ruff first (seconds; pyproject's [tool.ruff]), then the suite on every core where pytest-xdist
# is installed. .venv has both; a GPU host's python (PY=) may lack them, and says so.
test: $(BOOTSTRAP)
	$(LINT)
	$(PYTHON) -m pytest $$($(PYTHON) -c 'import xdist; print("-n auto")' 2>/dev/null)

# Maintainers: make the results now in reports/results the reference every rerun is compared with.
reference: $(BOOTSTRAP)
	$(PYTHON) -m study reference
	$(PYTHON) -m study report

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# Other releases (not part of `make report` or CI): one venv per torch or JAX release under
# .matrix/, every other pin as in constraints.txt; each runs the test suite, then
# MATRIX_EXPERIMENTS on the CPU, and the report is re-rendered with every release beside ours.
MATRIX_TORCH       ?= 2.14.1
MATRIX_JAX         ?=
MATRIX_EXPERIMENTS ?= zero_point two_layer
MATRIX_SPECS       := $(foreach v,$(MATRIX_TORCH),torch==$(v)) $(foreach v,$(MATRIX_JAX),jax==$(v))
matrix: $(BOOTSTRAP)
	@set -e; for spec in $(MATRIX_SPECS); do \
	  pkg=$${spec%%==*}; ver=$${spec##*==}; env=.matrix/$$pkg-$$ver; \
	  if [ ! -f $$env/.installed ]; then \
	    echo "matrix: building $$env"; mkdir -p .matrix; $(PYTHON3) -m venv $$env; \
	    if [ $$pkg = jax ]; then pins="jax==$$ver jaxlib==$$ver"; drop='^(jax|jaxlib)=='; \
	    else pins="torch==$$ver"; drop='^torch=='; fi; \
	    grep -Ev "$$drop" constraints.txt > $$env.constraints; \
	    $$env/bin/python -m pip install --quiet --upgrade pip; \
	    $$env/bin/python -m pip install --quiet -c $$env.constraints $$pins -e '.[test]'; \
	    touch $$env/.installed; \
	  fi; \
	  echo "matrix: $$pkg $$ver: the test suite"; $$env/bin/python -m pytest -q -p no:cacheprovider -n auto; \
	done; \
	for spec in $(MATRIX_SPECS); do \
	  pkg=$${spec%%==*}; ver=$${spec##*==}; \
	  echo "matrix: $$pkg $$ver: $(MATRIX_EXPERIMENTS)"; \
	  .matrix/$$pkg-$$ver/bin/python -m study run $(MATRIX_EXPERIMENTS) --device cpu $(ARGS); \
	done
	$(PYTHON) -m study report

# Wall time of `study check` on MyReLU, with and without --quick, from an empty inductor cache
# (not part of `make test`: a benchmark; writes reports/benchmarks/check-wall-time.json).
.PHONY: bench-check
bench-check: $(BOOTSTRAP)
	$(PYTHON) tests/bench_check_wall_time.py
