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

.PHONY: report run test reference clean history gpu

# Where PYTHONDONTWRITEBYTECODE is set (this machine and its CI set it) and .venv holds no
# bytecode (uv compiles none), every python process compiles torch and jax from source: 16 s
# of CPU for a quick `study run`, not 5 s, and make test took 373 s, not 255 s, from a clean
# clone. make's commands write bytecode into .venv and the tree's __pycache__ (gitignored);
# `make test PYTHONDONTWRITEBYTECODE=1` keeps them from it.
export PYTHONDONTWRITEBYTECODE :=

# uv installs the pinned versions (constraints.txt) in about 45 s here where pip took 2 min; it
# reads no pip.conf, so it is given pip's find-links (where a local CPU torch wheel lies). Where
# uv cannot be installed, pip installs everything, and says so.
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON3) -m venv $(VENV)
	if $(VENV)/bin/python -m pip install --quiet -c constraints.txt uv; then \
	  links="$$($(VENV)/bin/python -m pip config get global.find-links 2>/dev/null) $${PIP_FIND_LINKS:-}"; \
	  $(VENV)/bin/python -m uv pip install --quiet --python $(VENV)/bin/python -c constraints.txt \
	    $$(for d in $$links; do printf -- '--find-links %s ' "$$d"; done) -e '.[study,test]'; \
	else \
	  echo "make: uv could not be installed; pip installs .venv (about 2 min)" >&2; \
	  $(VENV)/bin/python -m pip install --quiet --upgrade pip && \
	  $(VENV)/bin/python -m pip install --quiet -c constraints.txt -e '.[study,test]'; \
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

# The GPU workflow, on a GPU host whose python has CUDA builds of torch and jax (make gpu
# PY=python3): the untimed experiments side by side, then timing alone (so nothing shares the GPU
# with it), then study check on a registry rule, all into $(GPU_OUT). About 5 min on one H200
# (124 s + 157 s + 24 s, 2026-11-27). Without a GPU the first command refuses in one line.
GPU_OUT     ?= gpu-run
GPU_UNTIMED := two_layer zero_point bifurcation training transforms clone_hazard nonscalar_backward
GPU_RULE    ?= study.measure.custom_rules:MyReLU
gpu: $(BOOTSTRAP)
	$(PYTHON) -m study run $(GPU_UNTIMED) --device cuda --jobs 7 --results-dir $(GPU_OUT)/results
	$(PYTHON) -m study run timing --device cuda --results-dir $(GPU_OUT)/results
	$(PYTHON) -m study check $(GPU_RULE) --device cuda --json $(GPU_OUT)/check.json \
	    > $(GPU_OUT)/check.md || test $$? -eq 1  # 1: the check's findings, written; 2, 3 fail
	@echo "make gpu: done. cp -r $(GPU_OUT)/results/. reports/results/ in your checkout (run names never collide) and run make report there; the check is $(GPU_OUT)/check.md and .json"

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
# HISTORY_ARGS: e.g. --only torch, --release torch-2.4.1, --address HOST:6379. JAX 0.11 and later
# need Python 3.12: on an older Python, the first such env builds one from Debian's packages
# (study.runs.interpreters; as root, with debootstrap installed).
HISTORY_ARGS ?=
history: $(BOOTSTRAP)
	$(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet -c constraints.txt uv
	$(PYTHON) -m study history --engine ray $(HISTORY_ARGS)
	$(PYTHON) -m study report

# Wall time of `study check` on MyReLU, with and without --quick, from an empty inductor cache
# (not part of `make test`: a benchmark; writes reports/benchmarks/check-wall-time.json).
.PHONY: bench-check
bench-check: $(BOOTSTRAP)
	$(PYTHON) tests/bench_check_wall_time.py

# Wall time of `study conformance --framework torch` and `--framework jax` (target 60 s each) and
# their verdicts on every built-in against the committed listing of the same release (not part
# of `make test`: a benchmark; writes reports/benchmarks/conformance.json, exits 1 on a
# difference).
.PHONY: bench-conformance
bench-conformance: $(BOOTSTRAP)
	$(PYTHON) tests/bench_conformance.py

# The instrument installed as a user installs it: the project's wheel and one framework in a fresh
# venv each, built by uv from its cache, running study check, study conformance and the pytest
# plugin (tests/test_install.py; not part of `make test`: two venvs and four checks).
.PHONY: test-install
test-install: $(BOOTSTRAP)
	$(PYTHON) -m pytest -m install tests/test_install.py

# The judges tested by their faults: mutmut over the conformance verdicts, each survivor with why
# (tests/mutation.py; not part of `make test`; writes reports/benchmarks/mutation.json).
.PHONY: mutation
mutation: $(BOOTSTRAP)
	$(PYTHON) -m mutmut --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet -c constraints.txt mutmut
	$(PYTHON) tests/mutation.py

# Timing measured twice afresh, each run rendered alone: how often each run's estimate lies in
# the other's 95% interval (honest intervals: about 83%; not part of `make test`: two timing
# runs, minutes; writes reports/benchmarks/timing-rerun.json).
.PHONY: bench-timing
bench-timing: $(BOOTSTRAP)
	$(PYTHON) tests/bench_timing_rerun.py

# Wall time of `study report` over the committed results, and of `make test` and `make report`
# from a fresh clone of HEAD, set-up included (a benchmark, not part of `make test`; minutes:
# writes reports/benchmarks/speed.json). BENCH_ARGS: e.g. --only report --repeat 5.
.PHONY: bench-speed
BENCH_ARGS ?=
bench-speed: $(BOOTSTRAP)
	$(PYTHON) tests/bench_speed.py $(BENCH_ARGS)
