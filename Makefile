# rollguard: the two commands the README starts with are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
CACHE  ?= $(HOME)/.cache/rollguard
export ROLLGUARD_CACHE := $(CACHE)

.PHONY: venv controlplane demo test lint bench chaos image clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

controlplane:
	bash sandbox/scripts/build-control-plane.sh

demo: venv controlplane
	$(PY) -m sandbox.demo

# mypy checks the import name `rollguard` on a link tree (task/ as rollguard, tui/ as rollguard/tui):
# the editable install maps them with an import hook that mypy does not run.
TYPECHECK := $(VENV)/typecheck

lint: venv
	$(VENV)/bin/ruff check task tui sandbox tests bench
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/rollguard
	for f in task/*; do ln -s "$(CURDIR)/$$f" $(TYPECHECK)/rollguard/; done
	ln -s "$(CURDIR)/tui" $(TYPECHECK)/rollguard/tui
	MYPYPATH=$(TYPECHECK) $(VENV)/bin/mypy -p rollguard

# Two workers, each with its own sandbox: most test time is waiting on rollouts, not CPU.
test: venv controlplane lint
	$(VENV)/bin/pytest -q -m "not chaos" -n 2 --dist loadfile tests

chaos: venv controlplane
	$(VENV)/bin/pytest -q -m chaos -n 2 --dist loadfile tests

bench: venv controlplane
	$(PY) -m bench

image:
	@engine=$$(command -v podman || command -v docker || true); \
	if [ -z "$$engine" ]; then echo "make image: neither podman nor docker is installed" >&2; exit 2; fi; \
	$$engine build -f Containerfile -t rollguard:dev .

clean:
	rm -rf $(VENV) build dist *.egg-info .sandbox
