"""The reads of the pages k9s users reach for (issue 30 point 6): `:pods` and `:events`.

Read-only, like everything here: `pods` judges the namespaces in view again from what the live caches
hold (no request while they serve; before they do, the last read's states), `events` lists the
namespace's Events once (one request, the client's short timeout: a hung server is said, not waited on).
A refusal (`list events` not granted) is raised as the API said it, for the page to show with the fix.
Every method blocks: the pages call them from thread workers.
"""

from __future__ import annotations

from rollguard.core.resources import EVENTS
from rollguard.state import assessment
from rollguard.tui import data
from rollguard.tui.backend.live import Live
from rollguard.tui.views import EventView, PodRow

EVENTS_SHOWN = 500  # the newest of a namespace's Events the page lists (the API keeps an hour's by default)


class Browse(Live):
    """The pods and the Events of the namespaces in view."""

    def _namespace_state(self, namespace: str) -> assessment.NamespaceState | None:
        """A namespace's state with its workloads' revisions and pods (the held states leave them out
        while the caches serve: judged again from the caches, as `_full` does for one row)."""
        if self._caches:
            objects = self._cached_in(namespace)
        elif self._reading is not None:
            objects = {
                res: [o for o in items if data.namespace_of(o) == namespace]
                for res, items in self._reading.items()
            }
        else:
            return self._states.get(namespace)
        return data.assess(namespace, objects, selector=self.options.selector, now=self.now())

    def pods(
        self, *, selector: str = "", refs: frozenset[str] | None = None, namespace: str | None = None
    ) -> list[PodRow]:
        """The pods of the DCs and Deployments in view (of those ``selector`` matches, or ``refs`` names in
        ``namespace``, when given: a group's)."""
        if namespace is not None:
            namespaces = [namespace]
        else:
            namespaces = sorted(self._states) if self.all_namespaces else [self.namespace or "default"]
        states = [s for s in (self._namespace_state(ns) for ns in namespaces) if s is not None]
        return data.pod_rows(states, selector=selector, refs=refs)

    def events(self) -> list[EventView]:
        """The Events of the namespace in view (of every namespace with -A), newest first."""
        scope = None if self.all_namespaces else self.namespace or "default"
        items = self.api.list(EVENTS, namespace=scope).get("items", [])
        return data.event_views(items, limit=EVENTS_SHOWN)
