"""Parsing and validating user input: selectors, targets, image references, durations. Pure.

Every failure is a RefusedError naming what is wrong and how to fix it.
"""

from __future__ import annotations

import re

from rollguard.core.errors import RefusedError
from rollguard.core.selectors import split_requirements
from rollguard.core.structs import ImageTarget, WorkloadRef
from rollguard.kinds import kind_of

_NAME = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"^{_NAME}(\.{_NAME})*$")
_DNS_LABEL = re.compile(rf"^{_NAME}$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?)$")
_REQUIREMENT = re.compile(
    r"^\s*(?P<neg>!)?\s*(?P<key>[^\s=!,()]+)\s*"
    r"(?:(?P<op>==|=|!=)\s*(?P<value>[^\s=!,()]*)|\s+(?P<setop>in|notin)\s*\((?P<values>[^()]*)\))?\s*$"
)
# docker reference grammar, simplified: [host[:port]/]path[:tag][@sha256:hex]
_IMAGE = re.compile(
    r"^(?P<name>(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
    r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>sha256:[a-f0-9]{64}))?$"
)
_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
MAX_TIMEOUT = 24 * 3600


def _label_key_ok(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_LABEL_NAME.match(name))


def _label_value_ok(value: str) -> bool:
    return len(value) <= 63 and bool(_LABEL_VALUE.match(value))


def _clip(text: str, limit: int = 80) -> str:
    """Input as echoed in a message: a huge value must not become a huge line."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_selector(selector: str) -> str:
    """Validate a label selector as the API server would; returns it normalized.

    The normal form is the group's identity (its Lease and journal are named after it), so every
    spelling that selects the same workloads gives the same string: requirements sorted and without
    repeats, no spaces but the one around ``in``/``notin``, ``==`` as ``=``, a one-value set as ``=``/``!=``.
    """
    fix = "use key=value, key!=value, key in (a,b), key notin (a), key or !key, joined by commas"
    if not selector or not selector.strip():
        raise RefusedError("the selector is empty", fix=f"pass --selector, e.g. app=my-component ({fix})")
    normalized = []
    for part in split_requirements(selector):
        match = _REQUIREMENT.match(part)
        if not match or not part.strip():
            raise RefusedError(
                f"selector {_clip(selector)!r} is malformed at {_clip(part.strip())!r}", fix=fix
            )
        key = match["key"]
        if not _label_key_ok(key):
            raise RefusedError(
                f"selector {_clip(selector)!r}: {_clip(key)!r} is not a valid label key", fix=fix
            )
        if match["neg"] and (match["op"] or match["setop"]):
            raise RefusedError(f"selector {_clip(selector)!r}: '!' only goes with a bare key", fix=fix)
        if match["op"]:
            if not _label_value_ok(match["value"]):
                raise RefusedError(
                    f"selector {_clip(selector)!r}: {_clip(match['value'])!r} is not a valid label value",
                    fix="label values: at most 63 characters of [A-Za-z0-9_.-], alphanumeric at both ends",
                )
            op = "!=" if match["op"] == "!=" else "="
            normalized.append(f"{key}{op}{match['value']}")
        elif match["setop"]:
            values = sorted(v.strip() for v in match["values"].split(","))
            if not values or any(not v or not _label_value_ok(v) for v in values):
                raise RefusedError(
                    f"selector {_clip(selector)!r}: bad value list ({_clip(match['values'])})", fix=fix
                )
            normalized.append(_set_requirement(key, match["setop"], values))
        else:
            normalized.append(("!" if match["neg"] else "") + key)
    return ",".join(sorted(set(normalized)))


def _set_requirement(key: str, op: str, values: list[str]) -> str:
    """``key in (a)`` is ``key=a`` and ``key notin (a)`` is ``key!=a`` (the API server selects alike):
    one group, one spelling, so one lock and one journal."""
    unique = sorted(set(values))
    if len(unique) == 1:
        return f"{key}{'=' if op == 'in' else '!='}{unique[0]}"
    return f"{key} {op} ({','.join(unique)})"


def parse_image_ref(ref: str) -> tuple[str, str | None, str | None]:
    """(repository, tag, digest) of an image reference, or RefusedError."""
    match = _IMAGE.match(ref) if len(ref) <= 512 else None
    if match and not (match["tag"] or match["digest"]):
        raise RefusedError(
            f"image reference {ref[:80]!r} has no tag or digest (it would mean the moving tag :latest)",
            fix=f"pin it: {ref[:60]}@sha256:<64 hex digits> (preferred) or {ref[:60]}:TAG",
        )
    if not match:
        raise RefusedError(
            f"image reference {ref[:80]!r} is malformed",
            fix="use REPOSITORY@sha256:<64 hex digits> (preferred) or REPOSITORY:TAG, lowercase repository",
        )
    return match["name"], match["tag"], match["digest"]


def parse_workload(text: str) -> tuple[WorkloadRef, str | None]:
    """``dc/NAME[/CONTAINER]`` or ``deployment/NAME[/CONTAINER]`` (aliases allowed)."""
    parts = text.split("/")
    fix = (
        "write TARGET as dc/NAME, deploymentconfig/NAME, deployment/NAME or deploy/NAME, "
        "optionally followed by /CONTAINER"
    )
    if len(parts) not in (2, 3) or not all(parts):
        raise RefusedError(f"target {text[:80]!r} is malformed", fix=fix)
    try:
        kind = kind_of(parts[0])
    except KeyError:
        raise RefusedError(f"target {text[:80]!r}: unknown kind {parts[0][:40]!r}", fix=fix) from None
    if len(parts[1]) > 253 or not _DNS_SUBDOMAIN.match(parts[1]):
        raise RefusedError(f"target {text[:80]!r}: {parts[1][:60]!r} is not a valid object name", fix=fix)
    container = parts[2] if len(parts) == 3 else None
    if container is not None and not _DNS_LABEL.match(container):
        raise RefusedError(f"target {text[:80]!r}: {container[:60]!r} is not a valid container name", fix=fix)
    return WorkloadRef(kind.kind, parts[1]), container


def parse_image_target(text: str) -> ImageTarget:
    """One ``--image TARGET=REF``."""
    target, sep, image = text.partition("=")
    if not sep or not image:
        raise RefusedError(
            f"--image {text[:80]!r} has no '='", fix="write --image dc/NAME[/CONTAINER]=REPOSITORY@sha256:..."
        )
    ref, container = parse_workload(target)
    parse_image_ref(image)
    return ImageTarget(ref=ref, container=container, image=image)


def parse_duration(text: str, *, flag: str = "--timeout") -> int:
    """Seconds in ``90s``, ``10m``, ``1h30m`` or a plain number of seconds; 1 s to 24 h."""
    value = text.strip()
    seconds: int | None = None
    if value.isdigit():
        seconds = int(value)
    else:
        match = _DURATION.match(value)
        if match and value:
            h, m, s = (int(g or 0) for g in match.groups())
            seconds = h * 3600 + m * 60 + s
    fix = "use a duration like 90s, 10m or 1h30m, between 1s and 24h"
    if seconds is None:
        raise RefusedError(f"{flag} {text[:40]!r} is not a duration", fix=fix)
    if not 1 <= seconds <= MAX_TIMEOUT:
        raise RefusedError(f"{flag} {text[:40]!r} is out of range", fix=fix)
    return seconds


def parse_namespace(namespace: str) -> str:
    if not namespace or len(namespace) > 63 or not _DNS_LABEL.match(namespace):
        raise RefusedError(
            f"namespace {namespace[:80]!r} is not a valid namespace name",
            fix="namespaces are lowercase letters, digits and '-', at most 63 characters",
        )
    return namespace


# What a run may spend besides the rollout and its revert: preflight and the live cache's first sync,
# the lock, the promotion wait (engine.PROMOTION_WAIT, 60 s), the revert's settling time and the
# journal writes. Generous on purpose: the budget it protects ends in a SIGKILL.
STEP_OVERHEAD = 180


def format_duration(seconds: int) -> str:
    """``25m``, ``90s``, ``1h30m``: the form --timeout takes, for messages."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + (f"{secs}s" if secs else "")
    return text or "0s"


def check_step_budget(*, timeout: int, step_timeout: int, verify: int = 0) -> None:
    """Refuse a rollout ``timeout`` whose worst case cannot end before the step's own deadline.

    The worst case is the rollout taking all of ``timeout``, then the group revert as long again, plus
    STEP_OVERHEAD. A Tekton step timeout kills the step with SIGKILL, so a run that needed longer would
    be killed mid-revert; refusing first costs nothing on the cluster.
    """
    worst = 2 * timeout + verify + STEP_OVERHEAD
    if worst <= step_timeout:
        return
    limit = (step_timeout - STEP_OVERHEAD - verify) // 2
    fits = (
        f"use --timeout {format_duration(limit)} or less"
        if limit >= 1
        else "no --timeout fits a step that short"
    )
    raise RefusedError(
        f"--timeout {format_duration(timeout)} cannot fit in the step's {format_duration(step_timeout)}: "
        f"the rollout may take {format_duration(timeout)}, its revert {format_duration(timeout)} more, plus "
        + (f"{format_duration(verify)} for the checks (--verify, --bake), " if verify else "")
        + f"{format_duration(STEP_OVERHEAD)} for preflight, lock and promotion = {format_duration(worst)}, "
        "and the step is killed (SIGKILL, no revert) when its time is up",
        fix=f"{fits}, or give the step a timeout of at least {format_duration(worst)} "
        "(a copy of the Task; pass --step-timeout to match)",
    )
