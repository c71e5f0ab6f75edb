"""Manifests given with ``rollout -f``: read the sources, parse them, sort what they hold (pure but `read`).

What ``helm template``, ``oc process``, ``kustomize build`` and Tailor's export print is accepted alike:
multi-document YAML (``---``), JSON, and ``kind: List`` objects (flattened, nested ones too). ``-f`` is
repeatable and takes a file, a directory (its ``*.yaml``, ``*.yml`` and ``*.json`` files, sorted by name,
not recursing) or ``-`` for standard input (once). `read_sources` is the only I/O; `parse` turns the
texts into a `ManifestSet` (workloads by `WorkloadRef`, every other object named as ``Kind/name``), or
raises `RefusedError` naming the source and document that is wrong. Nothing here talks to a cluster:
whether a workload matches the selector or exists is decided in `rollguard.plan.manifest_decide`.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from rollguard.core.errors import RefusedError
from rollguard.core.structs import Obj, WorkloadRef
from rollguard.kinds import KINDS

SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"


@dataclass(frozen=True)
class Source:
    """One text to parse and where it came from (a path, or ``stdin``)."""

    name: str
    text: str


@dataclass(frozen=True)
class Manifest:
    """One workload's desired state as given, and where it was given."""

    ref: WorkloadRef
    body: Obj
    origin: str  # e.g. ``chart.yaml#2``

    @property
    def labels(self) -> dict[str, str]:
        return dict((self.body.get("metadata") or {}).get("labels") or {})


@dataclass
class ManifestSet:
    """What the input holds: the workloads, and every other object (``Kind/name``, with its origin)."""

    workloads: dict[WorkloadRef, Manifest] = field(default_factory=dict)
    others: list[tuple[str, str]] = field(default_factory=list)  # (Kind/name, origin)

    @property
    def other_names(self) -> list[str]:
        return [name for name, _ in self.others]


def read_sources(paths: Sequence[str], *, stdin: TextIO | None = None) -> list[Source]:
    """The texts ``-f`` names, in order; refuses a missing path, an empty directory, stdin twice."""
    sources: list[Source] = []
    seen_stdin = False
    for raw in paths:
        if raw == STDIN:
            if seen_stdin:
                raise RefusedError(
                    "-f - is given twice", fix="standard input can be read once; pass -f - once"
                )
            seen_stdin = True
            sources.append(Source("stdin", (stdin or sys.stdin).read()))
            continue
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in SUFFIXES)
            if not files:
                raise RefusedError(
                    f"-f {raw}: the directory holds no *.yaml, *.yml or *.json file",
                    fix="point -f at the directory the manifests were written to",
                )
        elif path.is_file():
            files = [path]
        else:
            raise RefusedError(f"-f {raw}: no such file or directory", fix="check the path")
        for file in files:
            try:
                sources.append(Source(str(file), file.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError) as exc:
                raise RefusedError(f"-f {raw}: cannot read {file}: {exc}", fix="check the file") from exc
    return sources


def documents(source: Source) -> Iterator[tuple[Obj, str]]:
    """Every object of one source with its origin (``name#N``), ``kind: List`` flattened."""
    import yaml

    try:
        docs = list(yaml.safe_load_all(source.text))
    except yaml.YAMLError as exc:
        raise RefusedError(
            f"{source.name} is not valid YAML or JSON: {str(exc).splitlines()[0]}",
            fix="check what wrote it (helm template, oc process ...) printed manifests only",
        ) from exc
    for number, doc in enumerate(docs, start=1):
        yield from _flatten(doc, f"{source.name}#{number}")


def _flatten(doc: Any, origin: str) -> Iterator[tuple[Obj, str]]:
    if doc is None:
        return  # an empty document (``---`` at the end, a comment only)
    if not isinstance(doc, dict):
        raise RefusedError(f"{origin} is not an object", fix="each document must be a Kubernetes object")
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        for index, item in enumerate(doc["items"]):
            yield from _flatten(item, f"{origin}.items[{index}]")
        return
    yield doc, origin


def parse(sources: Sequence[Source], *, namespace: str) -> ManifestSet:
    """Sort every object of ``sources`` into workloads and others (pure); refuses malformed ones.

    A workload must name itself, carry a spec with a pod template, and be in ``namespace`` (or name no
    namespace); the same workload given twice is refused, as kubectl would apply it twice.
    """
    found = ManifestSet()
    for source in sources:
        for doc, origin in documents(source):
            kind_name, meta = doc.get("kind"), doc.get("metadata")
            name = meta.get("name") if isinstance(meta, dict) else None
            if not isinstance(kind_name, str) or not kind_name or not isinstance(name, str) or not name:
                raise RefusedError(
                    f"{origin} has no kind or metadata.name",
                    fix="every object needs kind and metadata.name (generateName is not supported)",
                )
            kind = KINDS.get(kind_name)
            if kind is None or doc.get("apiVersion") != kind.resource.api_version:
                found.others.append((f"{kind_name}/{name}", origin))
                continue
            ref = kind.ref(doc)
            given_ns = (meta or {}).get("namespace")
            if given_ns not in (None, "", namespace):
                raise RefusedError(
                    f"{origin}: {ref.key} is for namespace {given_ns!r}, not {namespace!r}",
                    fix=f"render the manifests for {namespace} or pass -n {given_ns}",
                )
            template = (doc.get("spec") or {}).get("template") if isinstance(doc.get("spec"), dict) else None
            if not isinstance(template, dict):
                raise RefusedError(f"{origin}: {ref.key} has no spec.template", fix="give the whole workload")
            if ref in found.workloads:
                raise RefusedError(
                    f"{ref.key} is given twice ({found.workloads[ref].origin} and {origin})",
                    fix="give each workload once",
                )
            found.workloads[ref] = Manifest(ref=ref, body=copy.deepcopy(doc), origin=origin)
    return found
