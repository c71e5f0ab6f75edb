"""The ``job`` check: a Kubernetes Job from a manifest (a test image: smoke tests, contract tests), run to
its end by the cluster's own Job controller.

The Job is created in the group's namespace as ``<check>-<run id>`` (unique to the run; the manifest's
name is not used), labelled ``rollguard.io/run-id`` and ``rollguard.io/check``, and watched until the
Job controller sets its ``Complete`` or ``Failed`` condition: `backoffLimit`, `activeDeadlineSeconds`,
`completions` and the pods' restart policy are the controller's, honoured as Kubernetes does. The tail of
its pods' logs goes into the evidence. The Job is deleted afterwards (propagation ``Background``, so its
pods go too: a batch/v1 Job's own default orphans them), unless ``keep: true``, for debugging. A Job not
ended by the check's timeout fails the check (and is deleted as well).
"""

from __future__ import annotations

import time
from typing import Any

from rollguard.cluster.api import LogOptions
from rollguard.core.errors import ApiError, NotFound
from rollguard.core.report import CheckResult
from rollguard.core.resources import JOBS, PODS
from rollguard.core.structs import Obj
from rollguard.plan.checks import CHECK_LABEL, RUN_LABEL, Check, JobCheck, job_body, job_name
from rollguard.run.checks import Context, one_line, result

TAIL_LINES = 20  # of each pod's log, into the evidence
TAIL_PODS = 3  # the newest pods of the Job whose log tails are kept
WATCH_SLICE = 5  # seconds per watch request, so a stop is seen soon


def verdict(job: Obj) -> tuple[bool, str] | None:
    """(passed, why) once the Job controller has ended the Job (condition Complete or Failed), else None."""
    status = job.get("status") or {}
    counts = f"{status.get('succeeded', 0)} succeeded, {status.get('failed', 0)} failed"
    for cond in status.get("conditions") or []:
        if cond.get("status") != "True":
            continue
        if cond.get("type") == "Complete":
            return True, f"Complete ({counts})"
        if cond.get("type") == "Failed":
            said = ": ".join(x for x in (cond.get("reason"), cond.get("message")) if x)
            return False, f"Failed: {said or 'failed'} ({counts})"
    return None


def pod_state(pod: Obj) -> str:
    """One pod in a few words: its phase and its first container's state (``Failed, exit 1 Error``)."""
    status = pod.get("status") or {}
    words = [status.get("phase") or "Pending"]
    for cs in (status.get("containerStatuses") or [])[:1]:
        state = cs.get("state") or {}
        if "terminated" in state:
            t = state["terminated"]
            words.append(f"exit {t.get('exitCode')} {t.get('reason') or ''}".strip())
        elif "waiting" in state:
            words.append(str(state["waiting"].get("reason") or "waiting"))
        if cs.get("restartCount"):
            words.append(f"{cs['restartCount']} restarts")
    return ", ".join(words)


def run(check: Check, spec: JobCheck, ctx: Context) -> CheckResult:
    started = time.monotonic()
    deadline = started + check.timeout
    name = job_name(check.name, ctx.run_id)
    body = job_body(
        spec.manifest,
        name=name,
        namespace=ctx.namespace,
        run_id=ctx.run_id,
        check=check.name,
        timeout=check.timeout,
    )
    try:
        ctx.client.create(JOBS, body, namespace=ctx.namespace)
    except ApiError as exc:
        evidence = f"could not create Job {name} from {spec.path}: {one_line(str(exc))}"
        ctx.say(f"verify: job {name} failed: {evidence}")
        return result(check, ok=False, started=started, evidence=evidence)
    ctx.say(f"verify: job {name} ({spec.path}) created; waiting for it to end (timeout {check.timeout}s)")
    ended: tuple[bool, str] | None = None
    try:
        ended = _wait(ctx, name, check.name, deadline)
        tails = _tails(ctx, name)
    finally:
        cleanup = "" if spec.keep else _delete(ctx, name)
    if ended is None:
        why = ctx.stop_reason() if ctx.stop.is_set() else f"not ended within {check.timeout}s"
        ended = (False, why)
    ok, why = ended
    kept = f"; kept: kubectl -n {ctx.namespace} get job {name}" if spec.keep else ""
    evidence = f"job {name}: {why}{kept}{cleanup}"
    said = [line.strip() for line in tails if line.startswith("  ")]
    if not ok and said:  # the test's own last words, on the headline the first error quotes
        evidence += f"; last log line: {one_line(said[-1], 200)}"
    if tails:
        evidence += "\n" + "\n".join(tails)
    ctx.say(f"verify: job {name} {'ok' if ok else 'failed'}: {why}")
    return result(check, ok=ok, started=started, evidence=evidence)


def _wait(ctx: Context, name: str, check: str, deadline: float) -> tuple[bool, str] | None:
    """Watch the Job until it ends (its verdict), the deadline passes or the run stops (None)."""
    selector = f"{RUN_LABEL}={ctx.run_id},{CHECK_LABEL}={check}"
    while time.monotonic() < deadline and not ctx.stop.is_set():
        try:
            job = ctx.client.get(JOBS, name, namespace=ctx.namespace)
            found = verdict(job)
            if found is not None:
                return found
            slice_ = int(max(1, min(WATCH_SLICE, deadline - time.monotonic())))
            for event in ctx.client.watch(
                JOBS,
                namespace=ctx.namespace,
                resource_version=job["metadata"]["resourceVersion"],
                timeout_seconds=slice_,
                selector=selector,
            ):
                obj = event.get("object") or {}
                if (obj.get("metadata") or {}).get("name") == name and verdict(obj) is not None:
                    return verdict(obj)
                if ctx.stop.is_set() or time.monotonic() >= deadline:
                    break
        except NotFound:
            return False, "the Job was deleted by someone else"
        except ApiError as exc:  # a cut watch or a failed read: look again, the deadline still holds
            if ctx.stop.wait(1.0):
                break
            last = one_line(str(exc))
            ctx.say(f"verify: job {name}: {last}; watching again")
    return None


def _tails(ctx: Context, name: str) -> list[str]:
    """The newest pods' states and the tail of their first container's log."""
    try:
        pods = ctx.client.list(PODS, namespace=ctx.namespace, selector=f"job-name={name}").get("items", [])
    except ApiError as exc:
        return [f"pods of the Job not listed: {one_line(str(exc))}"]
    pods.sort(key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))
    out: list[str] = []
    for pod in pods[-TAIL_PODS:]:
        pname = pod["metadata"]["name"]
        containers: list[Any] = (pod.get("spec") or {}).get("containers") or []
        out.append(f"pod {pname} ({pod_state(pod)}):")
        if not containers:
            continue
        options = LogOptions(container=containers[0]["name"], tail_lines=TAIL_LINES)
        try:
            lines = list(ctx.client.pod_log(pname, namespace=ctx.namespace, options=options))
        except ApiError as exc:
            out.append(f"  (no log: {one_line(str(exc), 200)})")
            continue
        out += [f"  {line.rstrip()}" for line in lines[-TAIL_LINES:]]
    return out


def _delete(ctx: Context, name: str) -> str:
    """Delete the Job and (in the background) its pods; '' or what went wrong, for the evidence."""
    try:
        ctx.client.delete(JOBS, name, namespace=ctx.namespace, propagation="Background")
    except NotFound:
        return ""
    except ApiError as exc:
        return f"; could not delete the Job: {one_line(str(exc), 200)}"
    return ""
