"""The logs page's reads: which pod `l` shows (a revision's newest pod, else its deployer pod) and
its log, followed across restarts.

Pure choices (which pod is newest, which container, what a restart looks like, what to say when there is
nothing) are `rollguard.tui.logs`'s; here are only the GETs and the log streams they decide on, so that
the choice is tested without a cluster and the I/O stays in the backend. Every method blocks: the logs
page iterates `follow_logs` in a thread worker and sets ``stop`` to end it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from rollguard.cluster.api import LogOptions
from rollguard.core.errors import NoLog, NotFound
from rollguard.core.resources import PODS
from rollguard.kinds import kind_of
from rollguard.state import assessment
from rollguard.tui import logs
from rollguard.tui.backend.live import Live
from rollguard.tui.views import WorkloadRow


class PodLogs(Live):
    """The pods of a row's revision and their logs (`_full` gives the revisions and pods)."""

    def log_pods(
        self, row: WorkloadRow, *, revision: int | None = None, ws: assessment.WorkloadState | None = None
    ) -> list[str]:
        """The pods `l` may show the logs of: those of revision ``revision``, else of the newest revision
        that has pods (from the last read, or ``ws``; `rollguard.tui.logs` GETs them to find the newest)."""
        ws = ws or self._full(row)
        if ws is None:
            return []
        names = [r.name for r in ws.revisions if revision is None or r.number == revision]
        for rev in names:  # newest revision first
            pods = [p.name for p in ws.pods if p.revision == rev]
            if pods:
                return pods
        return []

    def deployer_pod(
        self, row: WorkloadRow, *, revision: int | None = None, ws: assessment.WorkloadState | None = None
    ) -> str | None:
        """The pod `l` shows when revision ``revision`` (else the newest) has no pods: the one the kind says
        tells how its rollout went (a DC's deployer pod), read from the live revision as `oc logs dc/NAME`
        reads it; None when the revision has pods, or the kind runs no such pod."""
        ws = ws or self._full(row)
        rev = (
            next((r for r in ws.revisions if revision is None or r.number == revision), None) if ws else None
        )
        if ws is None or rev is None or any(p.revision == rev.name for p in ws.pods):
            return None
        kind = kind_of(row.kind)
        try:
            return kind.deployer_pod(self.api.get(kind.revisions, rev.name, namespace=row.namespace))
        except NotFound:
            return None

    def follow_logs(
        self, row: WorkloadRow, *, revision: int | None, pod: str | None = None, container: str | None = None,
        stop: threading.Event, tail: int = logs.TAIL, timestamps: bool = False,
    ) -> Iterator[logs.LogEvent]:  # fmt: skip
        """The logs page's content for pod ``pod``, else the newest pod of ``row`` (or of its revision
        ``revision``), as it comes: the previous container's log when there is one, then the current one
        followed; a restart adds the log of the container that ended. ``container``: that one, else the
        one `logs.container_to_show` picks; a revision without pods: its `deployer_pod`'s log.
        ``timestamps``: each line prefixed with the kubelet's time of it (k9s' `t`). Ends soon after
        ``stop`` is set."""
        found = []
        ws = None if pod else self._full(row)
        deployer = None if pod else self.deployer_pod(row, revision=revision, ws=ws)
        one = pod or deployer
        names = [one] if one else self.log_pods(row, revision=revision, ws=ws)
        for name in names[: logs.MAX_PODS]:
            with contextlib.suppress(NotFound):  # deleted since the read the row was made from
                found.append(self.api.get(PODS, name, namespace=row.namespace))
        newest = logs.newest_pod(found)
        if newest is None:
            yield logs.Note(logs.nothing_to_show(pod=pod, deployer=deployer), warning=True)
            return
        name, container, ns = (
            newest["metadata"]["name"],
            logs.container_to_show(newest, container),
            row.namespace,
        )
        yield from logs.opening(newest, container, len(found), deployer=deployer is not None)
        inst = logs.instance_of(newest, container)
        if inst.previous:
            yield logs.Heading(f"previous container (restart {inst.restarts}): {inst.previous}")
            yield from self._log(
                name, ns, container, previous=True, tail=tail, stop=stop, timestamps=timestamps
            )
        noted = False
        while not stop.is_set():
            yield logs.Heading(f"current container: {inst.detail}")
            if logs.crash_looping(inst):  # the kubelet would serve the previous container's log again
                if not noted:
                    yield logs.Note("it has not started again yet: the log above is its last run")
                    noted = True
            else:
                yield from self._log(
                    name,
                    ns,
                    container,
                    previous=False,
                    tail=tail,
                    stop=stop,
                    follow=True,
                    timestamps=timestamps,
                )
            seen = inst
            while not stop.wait(logs.POLL):  # the log ended, or the container waits: look for a restart
                try:
                    inst = logs.instance_of(self.api.get(PODS, name, namespace=ns), container)
                except NotFound:
                    yield logs.Note(f"pod {name} was deleted", warning=True)
                    return
                if logs.restarted(seen, inst):
                    break
            else:
                return
            if inst.restarts != seen.restarts and inst.previous:
                yield logs.Heading(
                    f"restarted (restart {inst.restarts}): the container before {inst.previous}"
                )
                yield from self._log(
                    name, ns, container, previous=True, tail=tail, stop=stop, timestamps=timestamps
                )

    def _log(
        self, pod: str, namespace: str, container: str, *, previous: bool, tail: int, stop: threading.Event,
        follow: bool = False, timestamps: bool = False,
    ) -> Iterator[logs.LogEvent]:  # fmt: skip
        try:
            options = LogOptions(
                container, follow=follow, previous=previous, tail_lines=tail, timestamps=timestamps
            )
            for text in self.api.pod_log(pod, namespace=namespace, options=options, stop=stop):
                yield logs.Line(text)
        except NoLog as exc:
            yield logs.Note(str(exc), warning=True)
