"""The rollout group's journal: a ConfigMap that survives the run and tells the next one what to do.

It holds, per workload, the last *verified* state (what a revert returns to), the run's targets and
where each workload stands, plus the group's last successful run (for drift detection) and a short
history (the audit trail). It is written before the first change and after every step.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from rollguard.client import Client
from rollguard.errors import Conflict, NotFound
from rollguard.resources import CONFIG_MAPS
from rollguard.structs import Obj, RunState, VerifiedState, WorkloadPhase

MANAGED_BY = "app.kubernetes.io/managed-by"
JOURNAL_LABEL = "rollguard.io/journal"
DATA_KEY = "journal.json"
SELECTOR_ANNOTATION = "rollguard.io/selector"
FINAL_STATES = frozenset({RunState.SUCCEEDED, RunState.REVERTED, RunState.REPAIRED})  # how a run ends well
HISTORY_LIMIT = 20


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def group_name(selector: str) -> str:
    """A stable object name for a rollout group, from its normalized selector."""
    slug = re.sub(r"[^a-z0-9]+", "-", selector.lower()).strip("-")[:40].strip("-") or "group"
    digest = hashlib.sha256(selector.encode()).hexdigest()[:8]
    return f"rollguard-{slug}-{digest}"


@dataclass
class WorkloadEntry:
    """One workload's line in the journal."""

    kind: str
    name: str
    verified: VerifiedState
    target_images: dict[str, str] = field(default_factory=dict)
    phase: WorkloadPhase = WorkloadPhase.PENDING
    revision_after: int = 0
    note: str = ""

    def __post_init__(self) -> None:
        self.phase = WorkloadPhase(self.phase)  # the word itself is accepted too; a typo is not

    def to_json(self) -> Obj:
        return {
            "kind": self.kind,
            "name": self.name,
            "verified": self.verified.to_json(),
            "target_images": self.target_images,
            "phase": self.phase,
            "revision_after": self.revision_after,
            "note": self.note,
        }

    @classmethod
    def from_json(cls, data: Obj) -> WorkloadEntry:
        return cls(
            kind=data["kind"],
            name=data["name"],
            verified=VerifiedState.from_json(data["verified"]),
            target_images=dict(data.get("target_images", {})),
            phase=WorkloadPhase.read(data.get("phase", WorkloadPhase.PENDING)),
            revision_after=int(data.get("revision_after", 0)),
            note=data.get("note", ""),
        )


@dataclass
class Journal:
    """The journal's content; `JournalStore` reads and writes it."""

    namespace: str
    selector: str
    run_id: str = ""
    command: str = ""
    actor: str = ""
    state: RunState = RunState.NEW
    started: str = ""
    updated: str = ""
    error: str = ""
    errors: list[str] = field(default_factory=list)
    workloads: dict[str, WorkloadEntry] = field(default_factory=dict)
    last_success: Obj = field(default_factory=dict)  # {run_id, finished, templates: {key: template}}
    history: list[Obj] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.state = RunState(self.state)  # the word itself is accepted too; a typo is not

    @property
    def final(self) -> bool:
        """No run is under way or left half done: the live group is what the journal verified."""
        return self.state.final

    def to_json(self) -> Obj:
        return {
            "version": 1,
            "namespace": self.namespace,
            "selector": self.selector,
            "run": {
                "id": self.run_id,
                "command": self.command,
                "actor": self.actor,
                "state": self.state,
                "started": self.started,
                "updated": self.updated,
                "error": self.error,
                "errors": self.errors,
            },
            "workloads": {k: w.to_json() for k, w in sorted(self.workloads.items())},
            "last_success": self.last_success,
            "history": self.history[-HISTORY_LIMIT:],
        }

    @classmethod
    def from_json(cls, data: Obj) -> Journal:
        run = data.get("run", {})
        return cls(
            namespace=data.get("namespace", ""),
            selector=data.get("selector", ""),
            run_id=run.get("id", ""),
            command=run.get("command", ""),
            actor=run.get("actor", ""),
            state=RunState.read(run.get("state", RunState.NEW)),
            started=run.get("started", ""),
            updated=run.get("updated", ""),
            error=run.get("error", ""),
            errors=list(run.get("errors", [])),
            workloads={k: WorkloadEntry.from_json(v) for k, v in data.get("workloads", {}).items()},
            last_success=dict(data.get("last_success", {})),
            history=list(data.get("history", [])),
        )

    def close_run(self, state: RunState) -> None:
        """End the current run in ``state`` and add it to the history."""
        self.state = state
        self.updated = now()
        self.history.append(
            {
                "run_id": self.run_id,
                "command": self.command,
                "actor": self.actor,
                "state": state,
                "started": self.started,
                "finished": self.updated,
                "error": self.error,
                "targets": {k: w.target_images for k, w in sorted(self.workloads.items()) if w.target_images},
            }
        )
        self.history = self.history[-HISTORY_LIMIT:]


class JournalStore:
    """Reads and writes one group's journal ConfigMap with optimistic concurrency."""

    def __init__(self, client: Client, *, namespace: str, selector: str) -> None:
        self._client = client
        self.namespace = namespace
        self.selector = selector
        self.name = group_name(selector)
        self._rv: str | None = None

    def load(self) -> Journal | None:
        try:
            cm = self._client.get(CONFIG_MAPS, self.name, namespace=self.namespace)
        except NotFound:
            self._rv = None
            return None
        self._rv = cm["metadata"].get("resourceVersion")
        return parse_configmap(cm)

    def save(self, journal: Journal) -> None:
        """Write the journal; the resourceVersion precondition stops a second writer silently winning."""
        journal.updated = now()
        body: Obj = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {MANAGED_BY: "rollguard", JOURNAL_LABEL: "true"},
                "annotations": {SELECTOR_ANNOTATION: self.selector},
            },
            "data": {DATA_KEY: json.dumps(journal.to_json(), sort_keys=True, separators=(",", ":"))},
        }
        for _ in range(3):
            try:
                if self._rv is None:
                    saved = self._client.create(CONFIG_MAPS, body, namespace=self.namespace)
                else:
                    body["metadata"]["resourceVersion"] = self._rv
                    saved = self._client.replace(CONFIG_MAPS, body, namespace=self.namespace)
                self._rv = saved["metadata"]["resourceVersion"]
                return
            except Conflict:
                # A retried request whose first answer was lost conflicts with its own success. Only a
                # journal of this very run (which holds the lock) is ours to adopt or overwrite;
                # anyone else's is never overwritten blindly.
                current = self._client.get(CONFIG_MAPS, self.name, namespace=self.namespace)
                stored = parse_configmap(current)
                if stored is None or not journal.run_id or stored.run_id != journal.run_id:
                    raise
                self._rv = current["metadata"]["resourceVersion"]
                if (current.get("data") or {}) == body["data"]:
                    return
        raise Conflict(f"journal {self.name}: too many write conflicts", status=409)


def parse_configmap(cm: Obj) -> Journal | None:
    """The journal in a ConfigMap, or None when it holds none (or garbage)."""
    try:
        data: Any = json.loads((cm.get("data") or {}).get(DATA_KEY, ""))
    except ValueError:
        return None
    return Journal.from_json(copy.deepcopy(data)) if isinstance(data, dict) else None
