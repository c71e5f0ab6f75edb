# rollguard: the two commands the README starts with are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
CACHE  ?= $(HOME)/.cache/rollguard
export ROLLGUARD_CACHE := $(CACHE)

.PHONY: venv controlplane prometheus demo test unit snapshots lint bench bench-big chaos image lock clean

venv: $(VENV)/.installed

# setuptools tells every editable install of a package-dir mapping (task/ and tui/ as rollguard) to
# "be careful with folders in your working directory with the same name as your package": information
# only (InformationOnly, not a deprecation), about the layout we chose, so that one message is not shown.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	PYTHONWARNINGS='ignore:Editable installation' $(PY) -m pip install -q -e '.[test]'
	touch $@

controlplane:
	bash sandbox/scripts/build-control-plane.sh

# A real Prometheus (Debian's package, unpacked into $(CACHE)/prometheus) for the prometheus check's
# tests, which start their own server on a free loopback port. Seconds the first time, instant after.
prometheus:
	bash sandbox/scripts/install-prometheus.sh

demo: venv controlplane
	$(PY) -m sandbox.demo

# mypy and the import contracts (.importlinter, import-linter) check the import name `rollguard` on a
# link tree (task/ as rollguard, tui/ as rollguard/tui): the editable install maps them with an import
# hook that neither runs. The TUI's fake cluster is
# checked with it, strictly, to prove that it satisfies `rollguard.cluster.client.Api`.
TYPECHECK := $(VENV)/typecheck

lint: venv
	$(VENV)/bin/ruff check task tui sandbox tests bench
	$(VENV)/bin/ruff format --check task tui sandbox tests bench
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/rollguard
	for f in task/*; do ln -s "$(CURDIR)/$$f" $(TYPECHECK)/rollguard/; done
	ln -s "$(CURDIR)/tui" $(TYPECHECK)/rollguard/tui
	MYPYPATH=$(TYPECHECK) $(VENV)/bin/mypy -p rollguard -m tests.helpers.fakecluster
	PYTHONPATH=$(TYPECHECK) $(VENV)/bin/lint-imports --no-cache

# Two workers, each with its own sandbox: most test time is waiting on rollouts, not CPU.
test: venv controlplane prometheus lint
	$(VENV)/bin/pytest -q -m "not chaos" -n 2 --dist loadfile tests

# make unit: every test that needs no cluster (pure logic, case tables, the TUI on its in-memory cluster,
# the Tekton files), in about a minute; the live tests are those that ask for the `sandbox` fixture.
unit: venv
	$(VENV)/bin/pytest -q -m "not cluster and not chaos" -n 2 tests

# make snapshots: write the TUI's SVG snapshots anew after an intended change of a screen; review the
# diff (tests/tui/__snapshots__/) before committing it.
snapshots: venv
	$(VENV)/bin/pytest -q tests/tui/test_snapshots.py --snapshot-update

chaos: venv controlplane
	$(VENV)/bin/pytest -q -m chaos -n 2 --dist loadfile tests

# make bench: the rollout and read cases, then the big cluster (10,000 workloads); bench-big alone.
bench: venv controlplane
	$(PY) -m bench
	$(PY) -m bench.big

bench-big: venv controlplane
	$(PY) -m bench.big

# The image's labels: the version from task/__init__.py (rollguard.__version__, the one place it is
# written; the image build fails on any other), the commit and its time from git (the commit's time rather
# than now, so that a rebuild of one commit is labelled alike). Override the tag on the command line, e.g.
# `make image TAG=quay.io/me/rollguard:dev`. tekton/build-image.yaml and .github/workflows/release.yaml
# read the version with the same sed and pass the same three.
VERSION  ?= $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' task/__init__.py)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
CREATED  ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo unknown)
TAG      ?= rollguard:$(VERSION)
# Passed only when set (make image PIP_INDEX_URL=https://nexus.example.com/repository/pypi/simple ...):
# a proxy or mirror for PyPI, the UBI repositories and the base image (docs/tekton.md, "What the build reaches").
MIRROR_ARGS := BASE_IMAGE HTTP_PROXY HTTPS_PROXY NO_PROXY PIP_INDEX_URL PIP_TRUSTED_HOST UBI_MIRROR

image:
	@engine=$$(command -v podman || command -v docker || true); \
	if [ -z "$$engine" ]; then echo "make image: neither podman nor docker is installed" >&2; exit 2; fi; \
	if [ -n "$$(git status --porcelain 2>/dev/null)" ]; then echo "make image: note: uncommitted changes are built but labelled $(REVISION)" >&2; fi; \
	set -x; $$engine build -f Containerfile -t $(TAG) \
	  --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) --build-arg CREATED=$(CREATED) \
	  $(foreach a,$(MIRROR_ARGS),$(if $($(a)),--build-arg $(a)='$($(a))')) .

# requirements.lock: every runtime dependency pinned with the hashes of its files on PyPI, resolved for
# the image's Python (3.11). The image installs exactly that (--require-hashes). `make lock` keeps the
# pins that still satisfy pyproject.toml; `make lock UPGRADE=1` moves every pin to the newest release.
# This machine's pip configuration (local indexes, find-links, constraints) is left out: the lock
# records what PyPI serves.
# requirements-build.lock: the same for the image's build stage (setuptools, as build-system.requires
# admits it), installed there with --require-hashes and used with --no-build-isolation.
# tests/tekton/lock-wheels.txt: which wheel of each locked package every platform gets (pip download per
# platform, a few lookups); tests/tekton/test_platforms.py checks the Task's tekton.dev/platforms against it.
PIP_PYPI := PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS= PIP_CONSTRAINT=
COMPILE  := $(VENV)/bin/pip-compile --quiet --generate-hashes --strip-extras --no-emit-index-url --no-emit-find-links $(if $(UPGRADE),--upgrade)

lock: venv
	$(PY) -m pip install -q 'pip-tools>=7.4,<8'
	CUSTOM_COMPILE_COMMAND='make lock' $(PIP_PYPI) $(COMPILE) --output-file requirements.lock pyproject.toml
	CUSTOM_COMPILE_COMMAND='make lock' $(PIP_PYPI) $(COMPILE) --allow-unsafe --only-build-deps --all-build-deps \
	  --output-file requirements-build.lock pyproject.toml
	$(PIP_PYPI) $(PY) -m tests.tekton.lock_wheels

clean:
	rm -rf $(VENV) build dist *.egg-info .sandbox
