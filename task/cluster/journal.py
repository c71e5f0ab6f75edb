"""The rollout group's journal: a ConfigMap that survives the run and tells the next one what to do.

It holds, per workload, the last *verified* state (what a revert returns to), the run's targets and
where each workload stands, plus the group's last successful run (for drift detection) and a short
history (the audit trail). It is written before the first change and after every step of the group
(not of each workload): before the first change it holds every workload's intended change (its targets,
phase ``pending`` in a run ``applying``), and the group's writes are recorded in one write once they
have all answered. A run killed between them leaves entries still ``pending`` whose workloads may have
been written: the next run (or a repair) tells which by the live object, on its verified state or not,
never by the phase alone.

Each pod template is stored once: a last-success template equal to the workload's verified one is
written as `SAME_AS_VERIFIED`. How the JSON is laid out in ConfigMaps (plain, gzipped, or in parts for
journals bigger than one ConfigMap can hold) is `rollguard.cluster.journal_codec`'s business.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rollguard.cluster.api import Api
from rollguard.cluster.journal_codec import (
    DATA_KEY,
    PART_KEY,
    PART_OF_LABEL,
    PARTS_ANNOTATION,
    decode,
    encode,
    is_part,
    part_names,
)
from rollguard.core.errors import Conflict, NotFound
from rollguard.core.resources import CONFIG_MAPS
from rollguard.core.structs import EntryPhase, Obj, RunState, VerifiedState

MANAGED_BY = "app.kubernetes.io/managed-by"
JOURNAL_LABEL = "rollguard.io/journal"
__all__ = [
    "DATA_KEY",
    "Journal",
    "JournalStore",
    "WorkloadEntry",
    "group_name",
    "is_part",
    "parse_configmap",
    "precise_now",
    "stamp_order",
]
SAME_AS_VERIFIED = "=verified"  # a last-success template equal to the entry's verified one
SELECTOR_ANNOTATION = "rollguard.io/selector"
HISTORY_LIMIT = 20


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def precise_now() -> str:
    """Now to the microsecond: two runs can verify one workload within the same second (a fast run
    right after a slow one), and drift is measured against the later one."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def stamp_order(stamp: str) -> dt.datetime:
    """A journal time stamp, with or without microseconds, as a time to compare ("" is the earliest).

    As strings the two forms sort wrongly ("...:01.5Z" before "...:01Z"), so they are compared parsed.
    """
    for form in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return dt.datetime.strptime(stamp, form).replace(tzinfo=dt.UTC)
        except ValueError:
            continue
    return dt.datetime.min.replace(tzinfo=dt.UTC)


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
    phase: EntryPhase = EntryPhase.PENDING
    revision_after: int = 0
    note: str = ""
    created: bool = False  # the run creates it (from -f): a revert deletes it
    restore: Obj = field(default_factory=dict)  # labels, annotations, spec fields a revert puts back
    # the manifest (labels, annotations, spec) the last verified run applied: the next run removes what
    # it set and the new manifest omits, as kubectl apply does
    applied: Obj = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.phase = EntryPhase(self.phase)  # the word itself is accepted too; a typo is not

    def to_json(self) -> Obj:
        return {
            "kind": self.kind,
            "name": self.name,
            "verified": self.verified.to_json(),
            "target_images": self.target_images,
            "phase": self.phase,
            "revision_after": self.revision_after,
            "note": self.note,
            # Only when set: a journal of an image-only run stays as earlier versions wrote it.
            **({"created": True} if self.created else {}),
            **({"restore": self.restore} if self.restore else {}),
            **({"applied": self.applied} if self.applied else {}),
        }

    @classmethod
    def from_json(cls, data: Obj) -> WorkloadEntry:
        return cls(
            kind=data["kind"],
            name=data["name"],
            verified=VerifiedState.from_json(data["verified"]),
            target_images=dict(data.get("target_images", {})),
            phase=EntryPhase.read(data.get("phase", EntryPhase.PENDING)),
            revision_after=int(data.get("revision_after", 0)),
            note=data.get("note", ""),
            created=bool(data.get("created", False)),
            restore=dict(data.get("restore") or {}),
            applied=dict(data.get("applied") or {}),
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
    # "stream:tag" -> what the group's ImageStream tag held before a promotion copied over it
    # ({"spec": spec tag item or None, "image": status image or ""}): a revert restores it
    tags: dict[str, Obj] = field(default_factory=dict)
    # `rollguard migrate` (rollguard.run.migrate): {"state": migrating|kept|finished|reverted,
    # "replicas": {dc name: replicas before}, "hpas": {hpa name: its scaleTargetRef before},
    # "deployments": [names created]}; empty for a group never migrated
    migration: Obj = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.state = RunState(self.state)  # the word itself is accepted too; a typo is not

    @property
    def final(self) -> bool:
        """No run is under way or left half done: the live group is what the journal verified."""
        return self.state.final

    @property
    def kept_dcs(self) -> list[str]:
        """The DCs a finished `rollguard migrate` keeps at 0 for the way back (its ``migration`` is
        ``kept``), sorted; [] when there is no such migration."""
        if self.migration.get("state") != "kept":
            return []
        return sorted(str(n) for n in self.migration.get("replicas") or {})

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
            "last_success": _dedup(self.last_success, self.workloads),
            "history": self.history[-HISTORY_LIMIT:],
            **({"tags": self.tags} if self.tags else {}),
            **({"migration": self.migration} if self.migration else {}),
        }

    @classmethod
    def from_json(cls, data: Obj) -> Journal:
        run = data.get("run", {})
        workloads = {k: WorkloadEntry.from_json(v) for k, v in data.get("workloads", {}).items()}
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
            workloads=workloads,
            last_success=_undedup(dict(data.get("last_success", {})), workloads),
            history=list(data.get("history", [])),
            tags=dict(data.get("tags") or {}),  # absent in journals written before promotions kept it
            migration=dict(data.get("migration") or {}),
        )

    def open_run(self, *, run_id: str, command: str, actor: str, state: RunState) -> None:
        """Start a run: who and what, its first state, no errors yet (its workload entries are the caller's)."""
        self.run_id, self.command, self.actor, self.state = run_id, command, actor, state
        self.started, self.error, self.errors = now(), "", []

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
    """Reads and writes one group's journal ConfigMap (and its parts) with optimistic concurrency."""

    def __init__(self, client: Api, *, namespace: str, selector: str) -> None:
        self._client = client
        self.namespace = namespace
        self.selector = selector
        self.name = group_name(selector)
        self._rv: str | None = None
        self._parts: list[str] = []  # the parts the stored journal ConfigMap names
        # The run state and time of the last write that landed: what the journal says when a later
        # write fails (a run must name it rather than report a success the journal does not hold).
        self.last_saved: tuple[RunState, str] | None = None

    def load(self) -> Journal | None:
        try:
            cm = self._client.get(CONFIG_MAPS, self.name, namespace=self.namespace)
        except NotFound:
            self._rv, self._parts = None, []
            return None
        self._rv = cm["metadata"].get("resourceVersion")
        self._parts = part_names(cm)
        journal = parse_configmap(cm, part=self._get_part)
        if journal is not None:
            self.last_saved = (journal.state, journal.updated)
        return journal

    def describe_last_saved(self) -> str:
        """What the stored journal says now, for a message about a write that did not land."""
        if self.last_saved is None:
            return f"journal {self.name} was never written by this run"
        state, updated = self.last_saved
        return f"journal {self.name} still says '{state}' (last written {updated})"

    def save(self, journal: Journal) -> None:
        """Write the journal; the resourceVersion precondition stops a second writer silently winning."""
        journal.updated = now()
        in_a = any(p.startswith(f"{self.name}-part-a-") for p in self._parts)
        layout = encode(journal.to_json(), name=self.name, slot="b" if in_a else "a")  # not the stored slot
        for part, chunk in layout.parts.items():  # parts first: the journal ConfigMap's write commits them
            self._put_part(part, chunk)
        annotations = {SELECTOR_ANNOTATION: self.selector}
        if layout.parts_annotation:
            annotations[PARTS_ANNOTATION] = layout.parts_annotation
        body: Obj = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {MANAGED_BY: "rollguard", JOURNAL_LABEL: "true"},
                "annotations": annotations,
            },
            "data": layout.data,
            "binaryData": layout.binary,
        }
        for _ in range(3):
            try:
                if self._rv is None:
                    saved = self._client.create(CONFIG_MAPS, body, namespace=self.namespace)
                else:
                    body["metadata"]["resourceVersion"] = self._rv
                    saved = self._client.replace(CONFIG_MAPS, body, namespace=self.namespace)
                self._committed(saved, journal, layout.parts)
                return
            except Conflict:
                # A retried request whose first answer was lost conflicts with its own success. Only a
                # journal of this very run (which holds the lock) is ours to adopt or overwrite;
                # anyone else's is never overwritten blindly.
                current = self._client.get(CONFIG_MAPS, self.name, namespace=self.namespace)
                stored = parse_configmap(current, part=self._get_part)
                if stored is None or not journal.run_id or stored.run_id != journal.run_id:
                    raise
                self._rv = current["metadata"]["resourceVersion"]
                same = (
                    (current.get("data") or {}) == body["data"]
                    and (current.get("binaryData") or {}) == body["binaryData"]
                    and part_names(current) == list(layout.parts)
                )
                if same:
                    self._committed(current, journal, layout.parts)
                    return
        raise Conflict(f"journal {self.name}: too many write conflicts", status=409)

    def _committed(self, saved: Obj, journal: Journal, parts: dict[str, str]) -> None:
        self._rv = saved["metadata"]["resourceVersion"]
        self._parts = list(parts)  # the other slot's parts stay, to be overwritten by the next save
        self.last_saved = (journal.state, journal.updated)

    def _put_part(self, name: str, chunk: str) -> None:
        body: Obj = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {MANAGED_BY: "rollguard", JOURNAL_LABEL: "true", PART_OF_LABEL: self.name},
            },
            "binaryData": {PART_KEY: chunk},
        }
        try:
            self._client.create(CONFIG_MAPS, body, namespace=self.namespace)
        except Conflict:  # the slot's part from an earlier save: nobody reads it now, overwrite it
            self._client.replace(CONFIG_MAPS, body, namespace=self.namespace)

    def _get_part(self, name: str) -> Obj | None:
        try:
            return self._client.get(CONFIG_MAPS, name, namespace=self.namespace)
        except NotFound:
            return None


def parse_configmap(cm: Obj, *, part: Callable[[str], Obj | None] | None = None) -> Journal | None:
    """The journal in a ConfigMap (any layout of `rollguard.cluster.journal_codec`), or None when it holds none.

    ``part`` finds a part ConfigMap by name, for a journal too big for one object.
    """
    data: Any = decode(cm, part=part)
    return Journal.from_json(copy.deepcopy(data)) if isinstance(data, dict) else None


def _dedup(last_success: Obj, workloads: dict[str, WorkloadEntry]) -> Obj:
    """``last_success`` with each template the entry's verified state already holds replaced by a mark."""
    templates = last_success.get("templates")
    if not isinstance(templates, dict):
        return last_success
    entries = {k: workloads[k].verified.template for k in templates if k in workloads}
    short = {k: SAME_AS_VERIFIED if k in entries and entries[k] == t else t for k, t in templates.items()}
    return {**last_success, "templates": short}


def _undedup(last_success: Obj, workloads: dict[str, WorkloadEntry]) -> Obj:
    templates = last_success.get("templates")
    if not isinstance(templates, dict):
        return last_success
    full = {
        k: copy.deepcopy(workloads[k].verified.template) if t == SAME_AS_VERIFIED and k in workloads else t
        for k, t in templates.items()
        if t != SAME_AS_VERIFIED or k in workloads
    }
    return {**last_success, "templates": full}
