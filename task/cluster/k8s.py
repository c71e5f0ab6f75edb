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

Some of those submodules import, at module level, libraries that serve one rare path each: ``client.rest``
imports ``requests`` (~20 ms with its cookie, charset and email machinery) for ``should_bypass_proxies``,
called only when a proxy is configured, and ``certifi`` (~5 ms with importlib.resources and pathlib),
used only when the cluster's CA is not configured; ``config.kube_config`` imports ``oauthlib.oauth2`` and
``requests_oauthlib`` (~15 ms) for the OIDC token refresh; ``client.configuration`` imports
``multiprocessing`` for ``cpu_count`` and, through urllib3's opt-in HTTP/2, ``importlib.metadata`` for
``version`` (~6 ms together). While such a submodule is imported, those names are stand-ins (`_Later`) in
``sys.modules``: a name the submodule imports from them is a forwarder that imports the real library when
called (``cpu_count``, called at once, is our copy of it), and the module bound by ``import oauthlib.oauth2``
resolves its attributes from the real one when used. The stand-ins leave ``sys.modules`` as soon as the submodule is
imported, so anything else importing those libraries gets the real ones; were a newer client to import
another name from them, its import is retried without stand-ins (correct, only slower).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
import types
from typing import Any

_PACKAGES = ("kubernetes", "kubernetes.client", "kubernetes.config")
# submodule -> {module it imports at module level for a rare path: names it takes with ``from M import``}
_LATER: dict[str, dict[str, tuple[str, ...]]] = {
    # urllib3 (imported here first) takes importlib.metadata's version for its opt-in HTTP/2; the
    # Configuration's default pool size calls multiprocessing.cpu_count (see `_cpu_count`)
    "client.configuration": {"importlib.metadata": ("version",), "multiprocessing": ("cpu_count",)},
    # the proxy check; Mozilla's CA bundle (certifi: importlib.resources, pathlib) when no CA is configured
    "client.rest": {"requests": (), "requests.utils": ("should_bypass_proxies",), "certifi": ()},
    "config.kube_config": {"oauthlib": (), "oauthlib.oauth2": (), "requests_oauthlib": ("OAuth2Session",)},
}
_lock = threading.RLock()


def _complete(module: types.ModuleType) -> None:
    """Run a bare package's real ``__init__`` in its own namespace (once)."""
    with _lock:
        if module.__dict__.get("_rollguard_complete", True):
            return
        module.__dict__["_rollguard_complete"] = True
        init = module.__dict__["__file__"]
        with open(init, encoding="utf-8") as f:
            exec(compile(f.read(), init, "exec"), module.__dict__)


def _bare(name: str, directory: str) -> types.ModuleType:
    module = types.ModuleType(name)
    init = os.path.join(directory, "__init__.py")
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[directory])
    module.__dict__.update(
        __file__=init,
        __path__=[directory],
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
        root = os.path.dirname(spec.origin)  # os.path, not pathlib: nothing else at start-up needs pathlib
        parent: types.ModuleType | None = None
        for name in _PACKAGES:
            module = _bare(name, root if name == "kubernetes" else os.path.join(root, name.rsplit(".", 1)[1]))
            sys.modules[name] = module
            if parent is not None:
                setattr(parent, name.rsplit(".", 1)[1], module)
            parent = parent or module
        client = sys.modules["kubernetes.client"]
        # what kubernetes.config.kube_config imports from the client package at import time
        client.Configuration = _import_deferring("client.configuration").Configuration  # type: ignore[attr-defined]
        client.ApiClient = _api_client  # type: ignore[attr-defined]


class _Later(types.ModuleType):
    """Stands in for module ``name`` while an official submodule imports it (see the module docstring)."""

    def __init__(self, name: str, forwarded: tuple[str, ...]) -> None:
        super().__init__(name)
        self._rollguard_importing = True
        for attr in forwarded:
            setattr(self, attr, _SAME.get((name, attr)) or _forwarder(name, attr))

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or self.__dict__.get("_rollguard_importing", True):
            raise AttributeError(attr)  # during the import: a name not forwarded, retried without stand-ins
        real = importlib.import_module(self.__name__)
        try:
            return getattr(real, attr)
        except AttributeError:
            return importlib.import_module(
                f"{self.__name__}.{attr}"
            )  # ``oauthlib.oauth2`` of ``import oauthlib``


def _cpu_count() -> int:
    """``multiprocessing.cpu_count()`` as it is written (``os.cpu_count()``, refusing None), without
    importing multiprocessing (pickle, its contexts) for the one call ``Configuration()`` makes."""
    count = os.cpu_count()
    if count is None:
        raise NotImplementedError("cannot determine number of cpus")
    return count


# names called at once (a forwarder would import the library right away): the same function, our copy
_SAME: dict[tuple[str, str], Any] = {("multiprocessing", "cpu_count"): _cpu_count}


def _forwarder(module_name: str, attr: str) -> Any:
    def forward(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module_name), attr)(*args, **kwargs)

    forward.__name__ = forward.__qualname__ = attr
    forward.__doc__ = f"{module_name}.{attr}, imported when first called."
    return forward


def _import_deferring(name: str) -> Any:
    """Import ``kubernetes.<name>`` with the stand-ins `_LATER` lists for it (if none of them is loaded)."""
    full = f"kubernetes.{name}"
    later = _LATER.get(name, {})
    if full in sys.modules or not later or any(m in sys.modules for m in later):
        return importlib.import_module(full)
    stand_ins = {m: _Later(m, forwarded) for m, forwarded in later.items()}
    sys.modules.update(stand_ins)
    try:
        return importlib.import_module(full)
    except ImportError:
        pass
    finally:
        for m, stand_in in stand_ins.items():
            stand_in.__dict__["_rollguard_importing"] = False
            if sys.modules.get(m) is stand_in:
                del sys.modules[m]
    return importlib.import_module(full)  # the client changed what it imports: the plain import


def module(name: str) -> Any:
    """``kubernetes.<name>`` (e.g. ``client.rest``, ``config.kube_config``), importing no more than it needs."""
    with _lock:
        _ensure()
        return _import_deferring(name)
