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

.PHONY: report run test reference clean history

# uv installs the pinned versions (constraints.txt) in about 45 s here where pip took 2 min; it
# reads no pip.conf, so it is given pip's find-links (where a local CPU torch wheel lies). Where
# uv cannot be installed, pip installs everything, and says so.
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON3) -m venv $(VENV)
	if $(VENV)/bin/python -m pip install --quiet -c constraints.txt uv; then \
	  links="$$($(VENV)/bin/python -m pip config get global.find-links 2>/dev/null) $${PIP_FIND_LINKS:-}"; \
	  $(VENV)/bin/python -m uv pip install --quiet --python $(VENV)/bin/python -c constraints.txt \
	    $$(for d in $$links; do printf -- '--find-links %s ' "$$d"; done) -e '.[test]'; \
	else \
	  echo "make: uv could not be installed; pip installs .venv (about 2 min)" >&2; \
	  $(VENV)/bin/python -m pip install --quiet --upgrade pip && \
	  $(VENV)/bin/python -m pip install --quiet -c constraints.txt -e '.[test]'; \
	fi
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

# Other releases (not part of `make report` or CI): one uv env per torch or JAX release under
# .history/ (built once, from one shared uv cache), each running zero_point and two_layer as
# shards on the Ray engine; then the report re-renders with every release beside ours.
# HISTORY_ARGS: e.g. --only torch, --release torch-2.4.1, --address HOST:6379.
HISTORY_ARGS ?=
history: $(BOOTSTRAP)
	$(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet -c constraints.txt uv
	$(PYTHON) -m study.runs.history --engine ray $(HISTORY_ARGS)
	$(PYTHON) -m study report

# Wall time of `study check` on MyReLU, with and without --quick, from an empty inductor cache
# (not part of `make test`: a benchmark; writes reports/benchmarks/check-wall-time.json).
.PHONY: bench-check
bench-check: $(BOOTSTRAP)
	$(PYTHON) tests/bench_check_wall_time.py

# Wall time of `study report` over the committed results, and of `make test` and `make report`
# from a fresh clone of HEAD, set-up included (a benchmark, not part of `make test`; minutes:
# writes reports/benchmarks/speed.json). BENCH_ARGS: e.g. --only report --repeat 5.
.PHONY: bench-speed
BENCH_ARGS ?=
bench-speed: $(BOOTSTRAP)
	$(PYTHON) tests/bench_speed.py $(BENCH_ARGS)
