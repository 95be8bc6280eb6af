# tooltrial: `make run` runs the bundled suite offline, `make test` runs the lint gates and the tests (`make test-fast`:
# the tests but the slow ones; `make lint`: the gates alone).
# Both create .venv from requirements.lock (hash-checked) when it is missing or stale.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.tooltrial-installed
PIP    := PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 $(BIN)/python -m pip --quiet

.PHONY: run test test-fast lint venv lock clean

# pytest-xdist: a worker per core and one more (many tests wait on subprocesses and servers; on 2 cores 3 workers
# take 182 s where 2 take 259 s), at most 5; a test file stays on one worker, so its module fixtures run once.
WORKERS := $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n + 1 < 5 ? n + 1 : 5 )))
XDIST := -n $(WORKERS) --dist loadfile --durations 10

run: $(STAMP)
	$(BIN)/tooltrial run cases/

test: $(STAMP) lint
	@echo "make test: every test, on $(WORKERS) worker processes (about 3 minutes on 2 cores; make test-fast skips the slow ones)"
	$(BIN)/python -m pytest $(XDIST)

# The gates, each at 0 findings or make fails: ruff's default rule set over runner/, tests/ and benchmarks/, and mypy over
# runner/ (both configured in pyproject.toml), the versions the lock pins.
lint: $(STAMP)
	$(BIN)/ruff check runner tests benchmarks
	$(BIN)/mypy

# All but the tests marked slow: for iterating; CI and `make test` run every test.
test-fast: $(STAMP)
	@echo "make test-fast: every test not marked slow (about 2 minutes on 2 cores)"
	$(BIN)/python -m pytest $(XDIST) -m 'not slow'

venv: $(STAMP)

# The docs/ pages as a site in site/; mkdocs comes from the docs extra, not the runtime lock.
.PHONY: docs
docs: $(STAMP)
	@$(BIN)/python -c 'import mkdocs' 2>/dev/null || $(PIP) install --no-build-isolation -e '.[docs]'
	$(BIN)/python -m mkdocs build --strict

# The stamp is newer than the locks and pyproject.toml once the install succeeded.
# pip itself comes first from requirements-pip.lock (hash-checked): whatever pip the interpreter's venv
# module ships (23.x included) only has to install that one wheel; the pinned pip installs the lock.
$(STAMP): requirements.lock requirements-pip.lock pyproject.toml
	@$(PYTHON) -c '' >/dev/null 2>&1 || \
	  { echo "make: $(PYTHON) is missing here (or does not run): install Python >= 3.11, or name one you have: make PYTHON=python3.11"; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "tooltrial needs Python >= 3.11, and $(PYTHON) is $$($(PYTHON) -V 2>&1); try: make PYTHON=python3.12"; exit 1; }
	@echo "make: installing tooltrial and its locked dependencies into $(VENV) (once; a minute or two)"
	@$(BIN)/python -c '' 2>/dev/null || $(PYTHON) -m venv --clear $(VENV)
	$(PIP) install --require-hashes -r requirements-pip.lock
	$(PIP) install --require-hashes -r requirements.lock
	$(PIP) install --no-deps --no-build-isolation -e .
	@touch $@

# Regenerate requirements.lock from requirements.in, with hashes, for Python 3.11 on x86-64 Linux,
# and requirements-pip.lock from BOOTSTRAP_PIP (the pip that installs the lock).
# Needs uv (https://docs.astral.sh/uv/) or, failing that, pip-tools (pip-compile).
BOOTSTRAP_PIP := pip==26.0.1
lock:
	@if command -v uv >/dev/null 2>&1; then \
	  uv pip compile requirements.in --generate-hashes --python-version 3.11 \
	    --python-platform x86_64-unknown-linux-gnu -o requirements.lock && \
	  echo '$(BOOTSTRAP_PIP)' | uv pip compile - --generate-hashes -o requirements-pip.lock; \
	elif command -v pip-compile >/dev/null 2>&1; then \
	  pip-compile --quiet --generate-hashes --allow-unsafe -o requirements.lock requirements.in && \
	  echo '$(BOOTSTRAP_PIP)' | pip-compile --quiet --generate-hashes --allow-unsafe -o requirements-pip.lock -; \
	else \
	  echo "make lock needs uv or pip-tools (pip install uv)"; exit 1; \
	fi

clean:
	rm -rf $(VENV) build dist site *.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
