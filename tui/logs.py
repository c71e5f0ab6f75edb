"""What `l` shows: the newest pod of a workload (or of one revision), its container's log, followed.

A DC revision without pods (a failed rollout's, scaled down) is shown by its deployer pod's log, as
`oc logs dc/NAME` shows it: how the rollout went, and the error it failed with (`Kind.deployer_pod`).

For a crash loop the first question is why it crashed: that is in the previous container's log (the last
terminated instance, `previous=true`), shown first under its own heading; then the current instance's log,
followed live. A container in back-off has no current instance: the kubelet would serve the same last
instance again, so the page says it is waiting instead and shows each new instance's log when it restarts.

Pure: choosing the pod, reading its container status, the events the page shows. The reads themselves
are `Backend.follow_logs` (cluster I/O lives in the backend), run in the page's thread worker until the
page closes. No Textual here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
TAIL = 500  # lines of each log read at first, as `oc logs --tail`
POLL = 2.0  # seconds between looks at the pod for a restart while it waits or after a log ends
MAX_PODS = 20  # pods read to find the newest


@dataclass(frozen=True)
class Heading:
    """A part of the page: which instance the lines below come from."""

    text: str


@dataclass(frozen=True)
class Line:
    """A line the container printed."""

    text: str


@dataclass(frozen=True)
class Note:
    """A sentence of our own (or the kubelet's) about the log, not a line of it."""

    text: str
    warning: bool = False


@dataclass(frozen=True)
class Shown:
    """Which pod and container the page shows, and the pod's containers (for `c`); not a line shown."""

    pod: str
    container: str
    containers: tuple[str, ...]


PageEvent = Heading | Line | Note  # what the page prints
LogEvent = PageEvent | Shown


@dataclass(frozen=True)
class Instance:
    """What a pod's container status says about its current and previous instances."""

    restarts: int
    state: str  # running | waiting | terminated | unknown
    detail: str  # reason and message, or start time
    previous: str  # how the last terminated instance ended ("" when there is none)
    container_id: str


def newest_pod(pods: Iterable[Obj]) -> Obj | None:
    """The pod created last (name breaks ties, so the choice is stable)."""
    return max(
        pods, key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]), default=None
    )


def containers_of(pod: Obj) -> tuple[str, ...]:
    return tuple(str(c.get("name", "")) for c in (pod.get("spec") or {}).get("containers") or [])


def container_to_show(pod: Obj, wanted: str | None = None) -> str:
    """``wanted`` when the pod has it; else the first container that is not ready and has ended or waits
    (the one whose log says why the pod is not ready); else the first."""
    names = containers_of(pod)
    if wanted in names:
        return str(wanted)
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        waits_or_ended = any(k in (status.get("state") or {}) for k in ("waiting", "terminated"))
        if status.get("name") in names and not status.get("ready") and waits_or_ended:
            return str(status["name"])
    return names[0] if names else ""


def next_container(shown: Shown) -> str:
    """The container after the one shown, in the pod's order (round)."""
    names = shown.containers
    return names[(names.index(shown.container) + 1) % len(names)] if shown.container in names else names[0]


def instance_of(pod: Obj, container: str) -> Instance:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    st: Obj = next((s for s in statuses if s.get("name") == container), {})
    state = st.get("state") or {}
    kind = next(iter(state), "unknown")
    body = state.get(kind) or {}
    if kind == "running":
        detail = f"running since {body.get('startedAt', '?')}"
    elif kind == "waiting":
        detail = ": ".join(x for x in (body.get("reason"), body.get("message")) if x) or "waiting"
    elif kind == "terminated":
        detail = (
            f"exited {body.get('exitCode', '?')} ({body.get('reason', '')}) at {body.get('finishedAt', '?')}"
        )
    else:
        detail = "no status yet"
    last = (st.get("lastState") or {}).get("terminated") or {}
    previous = ""
    if last:
        previous = (
            f"exited {last.get('exitCode', '?')} ({last.get('reason', '')}) at {last.get('finishedAt', '?')}"
        )
    cid = str(st.get("containerID") or last.get("containerID") or "")
    return Instance(int(st.get("restartCount") or 0), kind, detail, previous, cid)


def crash_looping(inst: Instance) -> bool:
    """Waiting to start again after an exit: the current log would only repeat the previous one."""
    return inst.state == "waiting" and bool(inst.previous)


def restarted(before: Instance, now: Instance) -> bool:
    """The container is another one than when the page last looked (a restart, a start, an exit)."""
    return (now.restarts, now.container_id, now.state) != (before.restarts, before.container_id, before.state)


def nothing_to_show(*, pod: str | None, deployer: str | None) -> str:
    """Why the page has no log: the pod asked for is gone, or the revision has none (nor a deployer pod)."""
    if pod:
        return f"no pod {pod}: it was deleted"
    if deployer:  # a cancelled rollout's is deleted
        return (
            f"no pod to show the logs of: the revision has no pods, and its deployer pod {deployer} is gone"
        )
    return "no pod to show the logs of: none runs now"


def opening(pod: Obj, container: str, of: int, *, deployer: bool = False) -> list[LogEvent]:
    """What the page says first: which pod and container (of how many pods), and the other containers;
    ``deployer``: the pod is the revision's deployer pod, shown because the revision has no pods."""
    name = pod["metadata"]["name"]
    names = containers_of(pod)
    others = [c for c in names if c != container]
    if deployer:
        text = f"deployer pod {name}: the revision has no pods"
    else:
        text = f"pod {name}, container {container}" + (f" (newest of {of} pods)" if of > 1 else "")
    if others:
        text += f"; c for the next container ({', '.join(others)})"
    return [Shown(name, container, names), Note(text)]
