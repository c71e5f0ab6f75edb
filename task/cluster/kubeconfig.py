"""Which cluster, credentials and namespace a command uses: kubectl's rules, in one place.

Every command (and the TUI) asks this module; nothing else reads KUBECONFIG or the ServiceAccount
directory. The rules are client-go's (tools/clientcmd/loader.go and merged_client_builder.go, as kubectl
and oc apply them):

- ``--kubeconfig FILE``: only that file, which must exist.
- else every file of ``KUBECONFIG`` (a list joined by ``os.pathsep``, duplicates dropped), else
  ``~/.kube/config``. Missing files and empty entries are skipped; a file that cannot be read or parsed
  is an error. Clusters, users and contexts are merged by name: the first file that names an entry wins
  it whole (a later file's same-named entry is discarded, not merged field by field). Plain values
  (``current-context``) come from the first file that sets them. Relative paths in an entry are resolved
  against the directory of the file the entry came from.
- ``--context NAME`` overrides the current context.
- when no file gave a usable configuration and the process runs in a pod (KUBERNETES_SERVICE_HOST/PORT
  and the ServiceAccount token exist), the pod's ServiceAccount is used.
- the namespace: ``-n``, else the context's namespace, else (in a pod) the pod's namespace
  (POD_NAMESPACE, then the ServiceAccount's ``namespace`` file), else ``default``.

Reading and merging are pure functions over parsed files; `resolve` does the I/O and refuses (exit 2)
with the fix when nothing usable is found.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rollguard.core.errors import LOGIN_FIX, RefusedError

SERVICEACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
HOME_FILE = "~/.kube/config"
ENTRY_LISTS = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))
# File references client-go resolves against the entry's file (GetClusterFileReferences,
# GetAuthInfoFileReferences).
PATH_FIELDS = {
    "cluster": ("certificate-authority",),
    "user": ("client-certificate", "client-key", "tokenFile"),
}

Config = dict[str, Any]


@dataclass(frozen=True)
class Merged:
    """The merged kubeconfig and where it came from."""

    config: Config
    files: tuple[str, ...] = ()  # the files read, in precedence order
    missing: tuple[str, ...] = ()  # listed but absent (skipped, as kubectl does)

    @property
    def empty(self) -> bool:
        return not any(self.config.get(name) for name, _ in ENTRY_LISTS)

    def names(self, kind: str) -> list[str]:
        return [str(e.get("name")) for e in self.config.get(kind) or []]

    def entry(self, kind: str, name: str) -> Config | None:
        return next((e for e in self.config.get(kind) or [] if e.get("name") == name), None)


@dataclass(frozen=True)
class Connection:
    """How to reach the cluster: a kubeconfig context, or the pod's ServiceAccount."""

    in_cluster: bool
    context: str | None  # the context in use (None in-cluster)
    merged: Merged = field(default_factory=lambda: Merged({}))
    context_namespace: str | None = None
    pod_namespace: str | None = None  # in a pod (even when a kubeconfig is used, like client-go)
    serviceaccount_dir: str = SERVICEACCOUNT_DIR
    environ: Mapping[str, str] = field(default_factory=dict)

    @property
    def describe(self) -> str:
        if self.in_cluster:
            return "the pod's ServiceAccount"
        return f"context {self.context!r} of {', '.join(self.merged.files)}"

    def namespace(self, given: str | None) -> tuple[str, str]:
        """(namespace, where it came from) by kubectl's order."""
        if given:
            return given, "--namespace"
        if self.context_namespace:
            return self.context_namespace, f"the namespace of context {self.context!r}"
        if self.pod_namespace:
            return self.pod_namespace, "the pod's namespace"
        return "default", "the default (no -n, and the context sets none)"

    def configure(self, cfg: Any) -> None:
        """Fill a ``kubernetes.client.Configuration`` (credentials refresh as the library does)."""
        from rollguard.cluster import k8s

        # Only the loader in use is imported: kube_config imports oauthlib, requests_oauthlib and yaml
        # at module level (~25 ms of a start-up), which a pod's ServiceAccount never needs.
        if self.in_cluster:
            InClusterConfigLoader = k8s.module("config.incluster_config").InClusterConfigLoader
            InClusterConfigLoader(
                token_filename=os.path.join(self.serviceaccount_dir, "token"),
                cert_filename=os.path.join(self.serviceaccount_dir, "ca.crt"),
                environ=dict(self.environ),
            ).load_and_set(cfg)
            return
        KubeConfigLoader = k8s.module("config.kube_config").KubeConfigLoader
        try:
            loader = KubeConfigLoader(self.merged.config, active_context=self.context, config_base_path="")
            loader.load_and_set(cfg)
        except Exception as exc:  # ConfigException, an exec plugin that failed, a bad field
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise RefusedError(
                f"cannot use context {self.context!r} of {', '.join(self.merged.files)}: {text}",
                fix=LOGIN_FIX,
            ) from exc


# -- pure rules ---------------------------------------------------------------------------------------


def loading_paths(explicit: str | None, environ: Mapping[str, str]) -> list[str]:
    """The files to read, in precedence order (client-go's NewDefaultClientConfigLoadingRules)."""
    if explicit:
        return [explicit]
    listed = environ.get("KUBECONFIG", "")
    if listed:
        return list(dict.fromkeys(p for p in listed.split(os.pathsep) if p))
    return [HOME_FILE]


def resolve_paths(entry: Config, section: str, base: str) -> Config:
    """A copy of one cluster/user entry with its relative file references made absolute."""
    body = dict(entry.get(section) or {})
    for key in PATH_FIELDS.get(section, ()):
        value = body.get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            body[key] = os.path.normpath(os.path.join(base, os.path.expanduser(value)))
    plugin = body.get("exec")
    command = plugin.get("command") if isinstance(plugin, dict) else None
    if (
        isinstance(plugin, dict)
        and isinstance(command, str)
        and os.sep in command
        and not os.path.isabs(command)
    ):
        # an exec credential plugin named by a relative path, like ./bin/token-helper (client-go resolves
        # it against the file too; a bare name is looked up on PATH)
        body["exec"] = {**plugin, "command": os.path.normpath(os.path.join(base, command))}
    return {**entry, section: body}


def merge(files: Sequence[tuple[str, Config]]) -> Config:
    """Merge parsed kubeconfigs (path, content) in precedence order: the first to name an entry wins it
    whole; the first to set a plain value (current-context) wins it."""
    merged: Config = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
    seen: dict[str, set[str]] = {name: set() for name, _ in ENTRY_LISTS}
    for path, content in files:
        base = os.path.dirname(os.path.abspath(path))
        for name, section in ENTRY_LISTS:
            for entry in content.get(name) or []:
                if not isinstance(entry, dict) or not entry.get("name") or entry["name"] in seen[name]:
                    continue
                seen[name].add(entry["name"])
                merged[name].append(resolve_paths(entry, section, base))
        for key, value in content.items():
            if key not in seen and key not in ("apiVersion", "kind") and value and key not in merged:
                merged[key] = value  # current-context, preferences: first one set
    return merged


# -- reading -------------------------------------------------------------------------------------------


def read(explicit: str | None = None, *, environ: Mapping[str, str] | None = None) -> Merged:
    """Read and merge the kubeconfig files kubectl would read (RefusedError on an unreadable one)."""
    env = os.environ if environ is None else environ
    parsed: list[tuple[str, Config]] = []
    missing: list[str] = []
    for raw in loading_paths(explicit, env):
        path = os.path.expanduser(raw)
        try:
            with open(path, encoding="utf-8") as f:
                content = _load_yaml(f.read()) or {}
        except FileNotFoundError:
            if explicit:
                raise RefusedError(
                    f"--kubeconfig {raw!r} does not exist",
                    fix="pass an existing file, or leave --kubeconfig out to use KUBECONFIG / ~/.kube/config",
                ) from None
            missing.append(path)
            continue
        except (OSError, UnicodeDecodeError, _yaml_error()) as exc:
            raise RefusedError(
                f"cannot read kubeconfig {path!r}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                fix="fix or remove the file (kubectl config view shows what kubectl makes of it)",
            ) from exc
        if not isinstance(content, dict):
            raise RefusedError(
                f"kubeconfig {path!r} is not a kubeconfig (no mapping at the top)",
                fix="fix or remove the file",
            )
        parsed.append((path, content))
    return Merged(merge(parsed), files=tuple(p for p, _ in parsed), missing=tuple(missing))


def _load_yaml(text: str) -> Any:
    """One YAML document, safely; with libyaml's parser when PyYAML has it (same results, faster).

    yaml is imported here, only once a file was found: in a pod without a kubeconfig it never is.
    """
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _yaml_error() -> type[Exception]:
    import yaml

    return yaml.YAMLError


def in_cluster_possible(environ: Mapping[str, str], serviceaccount_dir: str) -> bool:
    """client-go's inClusterClientConfig.Possible: the service env and a mounted token."""
    return bool(
        environ.get("KUBERNETES_SERVICE_HOST")
        and environ.get("KUBERNETES_SERVICE_PORT")
        and os.path.isfile(os.path.join(serviceaccount_dir, "token"))
    )


def pod_namespace(environ: Mapping[str, str], serviceaccount_dir: str) -> str | None:
    """The pod's namespace as client-go finds it: POD_NAMESPACE (downward API), then the token's."""
    if environ.get("POD_NAMESPACE"):
        return environ["POD_NAMESPACE"]
    try:
        with open(os.path.join(serviceaccount_dir, "namespace"), encoding="utf-8") as f:
            return f.read().strip() or None
    except OSError:
        return None


def resolve(
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
    serviceaccount_dir: str | None = None,
) -> Connection:
    """The connection a command with these flags uses, or RefusedError naming the fix."""
    env = dict(os.environ if environ is None else environ)
    sa_dir = serviceaccount_dir or SERVICEACCOUNT_DIR
    merged = read(kubeconfig, environ=env)
    in_pod = in_cluster_possible(env, sa_dir)
    pod_ns = pod_namespace(env, sa_dir) if in_pod else None
    if merged.empty and in_pod and not context:
        return Connection(
            in_cluster=True, context=None, merged=merged, pod_namespace=pod_ns,
            serviceaccount_dir=sa_dir, environ=env,
        )  # fmt: skip
    if merged.empty and merged.files:
        raise RefusedError(
            f"kubeconfig {', '.join(merged.files)} holds no clusters, users or contexts",
            fix="log in (oc login) to fill it, or pass --kubeconfig FILE / set KUBECONFIG to another file",
        )
    if merged.empty:
        where = ", ".join(merged.missing) or "(none)"
        raise RefusedError(
            f"no kubeconfig found (looked for {where})"
            + (f" to take context {context!r} from" if context else ""),
            fix="log in (oc login), pass --kubeconfig FILE or set KUBECONFIG "
            "(in a pod, the ServiceAccount is used)",
        )
    name = context or merged.config.get("current-context")
    contexts = merged.names("contexts")
    if not name:
        raise RefusedError(
            f"the kubeconfig ({', '.join(merged.files)}) has no current-context",
            fix=f"pass --context NAME (one of: {', '.join(contexts) or 'none'}) or run kubectl config use-context",
        )
    entry = merged.entry("contexts", name)
    if entry is None:
        raise RefusedError(
            f"context {name!r} is not in the kubeconfig ({', '.join(merged.files)})",
            fix=f"pass --context with one of: {', '.join(contexts) or 'none'} (kubectl config get-contexts)",
        )
    body = entry.get("context") or {}
    cluster = body.get("cluster")
    if not cluster or merged.entry("clusters", cluster) is None:
        raise RefusedError(
            f"context {name!r} names cluster {cluster!r}, which is not in the kubeconfig ({', '.join(merged.files)})",
            fix="add the cluster (kubectl config set-cluster) or use another context",
        )
    user = body.get("user")
    if user and merged.entry("users", user) is None:
        raise RefusedError(
            f"context {name!r} names user {user!r}, which is not in the kubeconfig ({', '.join(merged.files)})",
            fix="log in again (oc login) or use another context",
        )
    return Connection(
        in_cluster=False,
        context=str(name),
        merged=merged,
        context_namespace=str(body.get("namespace") or "") or None,
        pod_namespace=pod_ns,
        serviceaccount_dir=sa_dir,
        environ=env,
    )


def contexts(kubeconfig: str | None = None) -> tuple[list[str], str | None]:
    """The merged kubeconfig's context names and its current one ([] without a usable kubeconfig)."""
    try:
        merged = read(kubeconfig)
    except RefusedError:
        return [], None
    current = merged.config.get("current-context")
    return sorted(merged.names("contexts")), str(current) if current else None
