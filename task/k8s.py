"""The parts of the official `kubernetes` client rollguard uses, imported without the rest of it.

rollguard keeps the official client for configuration (``KubeConfigLoader``, ``InClusterConfigLoader``,
``Configuration``: auth plugins, exec credentials, token refresh, TLS files) and for transport
(``rest.RESTClientObject``: the urllib3 pool, TLS, proxies; ``ApiException``). It speaks raw JSON, so
it needs none of the generated API classes and models, yet ``import kubernetes.anything`` runs the
package's ``__init__``, which imports all of them: ~0.3 s and ~40 MB per process on a quiet machine,
more than the rest of a `rollguard status` run.

So, when nothing has imported `kubernetes` yet, `kubernetes`, `kubernetes.client` and
`kubernetes.config` are registered as bare packages (their real directories, no ``__init__`` run) and
only the submodules above are imported from them. Such a package completes itself, running its real
``__init__`` in place, the first time anything asks it for a name it does not have yet (`import
kubernetes; kubernetes.watch`, ``from kubernetes import client; client.CoreV1Api``): code in the same
process that wants the whole library still gets it. When `kubernetes` was imported before, it is used
as it is.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from pathlib import Path
from typing import Any

_PACKAGES = ("kubernetes", "kubernetes.client", "kubernetes.config")
_lock = threading.RLock()


def _complete(module: types.ModuleType) -> None:
    """Run a bare package's real ``__init__`` in its own namespace (once)."""
    with _lock:
        if module.__dict__.get("_rollguard_complete", True):
            return
        module.__dict__["_rollguard_complete"] = True
        init = Path(module.__dict__["__file__"])
        exec(compile(init.read_text(), str(init), "exec"), module.__dict__)


def _bare(name: str, directory: Path) -> types.ModuleType:
    module = types.ModuleType(name)
    init = directory / "__init__.py"
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(directory)])
    module.__dict__.update(
        __file__=str(init),
        __path__=[str(directory)],
        __package__=name,
        __spec__=spec,
        _rollguard_complete=False,
    )

    def __getattr__(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        _complete(module)
        try:
            return module.__dict__[attr]
        except KeyError:
            return importlib.import_module(f"{name}.{attr}")

    module.__dict__["__getattr__"] = __getattr__
    return module


def _api_client(*args: Any, **kwargs: Any) -> Any:
    """Stand-in for ``kubernetes.client.ApiClient`` until the package is complete (OIDC refresh uses it)."""
    client = sys.modules["kubernetes.client"]
    _complete(client)
    return client.ApiClient(*args, **kwargs)


def _ensure() -> None:
    with _lock:
        if "kubernetes" in sys.modules:
            return
        spec = importlib.util.find_spec("kubernetes")
        if spec is None or spec.origin is None:
            raise ImportError("the 'kubernetes' package is not installed")
        root = Path(spec.origin).parent
        parent: types.ModuleType | None = None
        for name in _PACKAGES:
            module = _bare(name, root if name == "kubernetes" else root / name.rsplit(".", 1)[1])
            sys.modules[name] = module
            if parent is not None:
                setattr(parent, name.rsplit(".", 1)[1], module)
            parent = parent or module
        client = sys.modules["kubernetes.client"]
        # what kubernetes.config.kube_config imports from the client package at import time
        client.Configuration = importlib.import_module("kubernetes.client.configuration").Configuration  # type: ignore[attr-defined]
        client.ApiClient = _api_client  # type: ignore[attr-defined]


def module(name: str) -> Any:
    """``kubernetes.<name>`` (e.g. ``client.rest``, ``config.kube_config``), importing no more than it needs."""
    _ensure()
    return importlib.import_module(f"kubernetes.{name}")
