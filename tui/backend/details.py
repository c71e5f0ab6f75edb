"""One workload's detail, YAML and template diff: the reads the detail screens make for one row.

The detail is judged from `_full` (the namespace's state with revisions and pods) plus one events list;
the YAML and the diff GET the workload as the API holds it now, because the caches keep reduced objects
only. Building the views is `rollguard.tui.data`'s and `rollguard.tui.diff`'s (pure).
"""

from __future__ import annotations

from rollguard.core.resources import EVENTS
from rollguard.core.structs import Obj
from rollguard.kinds import kind_of
from rollguard.kinds.revision_causes import revision_causes
from rollguard.tui import data
from rollguard.tui.backend.live import Live
from rollguard.tui.diff import TemplateDiff, template_diff
from rollguard.tui.views import DetailView, WorkloadRow


class Details(Live):
    """What the detail, YAML and diff screens show of one row."""

    def _workload(self, row: WorkloadRow) -> Obj | None:
        """The reduced workload of a row: from the live caches, else from the last read."""
        res = kind_of(row.kind).resource
        for ns, cache in list(self._caches.items()):
            if ns in ("", row.namespace):
                obj = cache.get(res, row.name if ns else f"{row.namespace}/{row.name}")
                if obj is not None:
                    return obj
        return data.workload_object(self._objects, row)

    def _revision_objects(self, row: WorkloadRow, obj: Obj | None) -> list[Obj]:
        """The row's revision objects as the caches (or the read that seeds them) hold them: reduced, with
        what `rollguard.kinds.revision_causes` reads (the kinds' ``revision_annotations``, the encoded DC's
        details and change-cause); before they serve (or without them), one list of the namespace's."""
        if obj is None:
            return []
        kind = kind_of(row.kind)
        if self._caches:
            held = self._cached_in(row.namespace).get(kind.revisions, [])
        elif self._reading is not None:
            held = [o for o in self._reading.get(kind.revisions, []) if data.namespace_of(o) == row.namespace]
        else:
            held = self._list(kind.revisions, row.namespace)
        return kind.owned(obj, held)

    def detail(self, row: WorkloadRow) -> DetailView:
        """The detail of one row, from the last read plus the namespace's events (one list call)."""
        ws = self._full(row)
        obj = self._workload(row)
        causes = revision_causes(kind_of(row.kind), self._revision_objects(row, obj))
        names = data.involved_names(ws, row)
        events = [
            e
            for e in self._list(EVENTS, row.namespace)
            if (e.get("involvedObject") or {}).get("name") in names
        ]
        group = self.inventory.groups.get(row.group_key) if self.inventory else None
        ns_state = self._states.get(row.namespace)
        home = next((g for g in ns_state.groups if ws and g.name == ws.group), None) if ns_state else None
        return data.build_detail(row, ws, obj, events, group, home.journal if home else None, causes=causes)

    def yaml(self, row: WorkloadRow) -> str:
        """The workload as the API holds it now (one GET: the cache keeps reduced objects only)."""
        res = kind_of(row.kind).resource
        return data.as_yaml(self.api.get(res, row.name, namespace=row.namespace))

    def template_diff(self, row: WorkloadRow, *, revision: int | None = None) -> TemplateDiff:
        """The live template (one GET) against revision `revision` or, without one, the journal's verified one."""
        kind = kind_of(row.kind)
        live = self.api.get(kind.resource, row.name, namespace=row.namespace)
        after = (live.get("spec") or {}).get("template")
        ws = self._full(row)
        if revision is not None:
            names = [r.name for r in (ws.revisions if ws else ()) if r.number == revision]
            rev = self.api.get(kind.revisions, names[0], namespace=row.namespace) if names else {}
            before = kind.revision_template(rev) if rev else None
            left = f"revision {revision}" if names else f"revision {revision} (not found)"
        else:
            before, left = None, "no verified template (rollguard has not run on this group)"
            groups = self._states[row.namespace].groups if row.namespace in self._states else ()
            for group in groups:
                if ws is not None and group.name == ws.group:
                    for entry in group.journal.workloads.values():
                        if entry.kind == row.kind and entry.name == row.name:
                            before, left = entry.verified.template, f"verified by run {group.run_id}"
        return template_diff(before=before, after=after, left=left, right="live")
