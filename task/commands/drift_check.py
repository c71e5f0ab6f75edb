"""`rollguard drift-check`: the scheduled check. Exit 0 clean, 1 findings, 2 bad input or no cluster.

Read-only unless ``--emit-events`` (a Warning Event on each workload with a selected finding).
"""

from __future__ import annotations

import argparse
import datetime as dt
import enum
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rollguard.commands.common import (
    NAMESPACE_RULE,
    check_report_path,
    cluster_args,
    printer,
    session,
    write_or_warn,
)
from rollguard.commands.status import heading, read, render, scope, to_json
from rollguard.core.errors import EXIT_OK, EXIT_REFUSED, EXIT_REVERTED, ApiError, RefusedError

if TYPE_CHECKING:
    from rollguard.state.model import NamespaceState, WorkloadState

EXIT_FINDINGS = EXIT_REVERTED  # 1: something selected by --fail-on was found
EVENT_REASON = "RollguardDriftCheck"


def register(sub: Any) -> None:
    from rollguard.state.model import DEFAULT_FAIL_ON, FINDINGS

    p = sub.add_parser(
        "drift-check",
        help="find damaged workloads (exit 1) for a scheduled job",
        description="Exit 0 when nothing selected by --fail-on is found, 1 when something is, "
        f"2 on bad input, an unwritable --report or an unreachable cluster. {NAMESPACE_RULE}. "
        "--emit-events records one Warning Event per workload and finding text, counted up on each run "
        "(count and lastTimestamp, as kubectl's event recorder aggregates repeats).",
    )
    from rollguard.commands.status import scope_args

    scope_args(p, many=True)
    p.add_argument("--report", metavar="FILE", help="write the JSON report to FILE")
    p.add_argument(
        "--emit-events",
        action="store_true",
        help="create a Warning Event on each workload with a selected finding (else read-only)",
    )
    p.add_argument(
        "--fail-on",
        metavar="FINDINGS",
        default=",".join(f for f in FINDINGS if f in DEFAULT_FAIL_ON),
        help=f"comma-separated findings that fail the check, or all (default: %(default)s; "
        f"all: {','.join(FINDINGS)})",
    )
    cluster_args(p)
    p.set_defaults(handler=run)


class DriftStatus(enum.StrEnum):
    """The drift report's ``status`` (the CronJob's consumers read it)."""

    CLEAN = "clean"  # nothing selected by --fail-on was found: exit 0
    FINDINGS = "findings"  # something was: exit 1
    ERROR = "error"  # refused or unreachable, nothing checked: exit 2


def found_report(
    namespaces: Sequence[NamespaceState],
    failing: Sequence[WorkloadState],
    *,
    counts: dict[str, int],
    fail_on: frozenset[str],
) -> dict[str, Any]:
    """The report's findings: the status, what was read, the counts, and each failing workload with the
    findings ``--fail-on`` selects (`states`: every namespace's full assessment)."""
    workloads = [w for ns in namespaces for w in ns.workloads]
    return {
        "status": DriftStatus.FINDINGS if failing else DriftStatus.CLEAN,
        "namespaces": [ns.namespace for ns in namespaces],
        "workloads": len(workloads),
        "counts": {
            **{k: v for k, v in counts.items() if v},
            "healthy": sum(1 for w in workloads if w.healthy),
        },
        "failing": [
            {
                "namespace": w.namespace,
                "kind": w.ref.kind,
                "name": w.ref.name,
                "group": w.selector,
                "findings": [{"name": f.name, "reason": f.reason} for f in w.findings if f.name in fail_on],
            }
            for w in failing
        ],
        "errors": [],
        "states": to_json(namespaces),
    }


def run(args: argparse.Namespace) -> int:
    from rollguard.state.assessment import parse_findings, selected
    from rollguard.state.model import FINDINGS

    started = dt.datetime.now(dt.UTC)
    report: dict[str, Any] = {
        "status": DriftStatus.ERROR,
        "checked_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    client = None
    try:
        check_report_path(args.report)
    except RefusedError as exc:  # checked first: the report of this refusal could not be written either
        print(f"rollguard: drift-check: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    try:
        fail_on = parse_findings(args.fail_on)
        report["fail_on"] = sorted(fail_on)
        where = session(args)
        client = where.client
        printer(heading("drift-check", where, args))
        report["namespace_from"] = scope(where, args)[1]
        namespaces = read(where, args)
    except (RefusedError, ApiError) as exc:
        report["error"] = str(exc)
        print(f"rollguard: drift-check: {exc}", file=sys.stderr)
        _write(args.report, report)
        return EXIT_REFUSED
    workloads = [w for ns in namespaces for w in ns.workloads]
    failing = selected(workloads, fail_on)
    counts = {name: sum(1 for w in workloads if w.has(name)) for name in FINDINGS}
    report.update(found_report(namespaces, failing, counts=counts, fail_on=fail_on))
    report["seconds"] = round((dt.datetime.now(dt.UTC) - started).total_seconds(), 3)
    if args.emit_events:
        report["events"] = _emit(client, failing, fail_on, report["errors"])
    report["api_requests"] = dict(client.requests)
    lines = render(namespaces, only=failing)
    if lines:
        printer("\n".join(lines))
    found = ", ".join(f"{k} {v}" for k, v in counts.items() if v and k in fail_on)
    printer(
        f"drift-check: {len(workloads)} workloads in {len(namespaces)} namespaces; "
        + (f"{len(failing)} with findings ({found})" if failing else "nothing selected by --fail-on found")
    )
    _write(args.report, report)
    return EXIT_FINDINGS if failing else EXIT_OK


def _emit(client: Any, failing: list[Any], fail_on: frozenset[str], errors: list[str]) -> int:
    from rollguard.run.events import emit

    sent = 0
    for w in failing:
        meta = {"metadata": {"namespace": w.namespace, "uid": w.uid, "resourceVersion": w.resource_version}}
        message = "rollguard drift-check: " + "; ".join(str(f) for f in w.findings if f.name in fail_on)
        try:
            emit(client, w.ref, meta, reason=EVENT_REASON, message=message, warning=True)
            sent += 1
        except ApiError as exc:  # the check's verdict stands; the report says what could not be recorded
            errors.append(f"event on {w.namespace}/{w.key}: {exc}")
    if errors:
        print(f"rollguard: drift-check: {len(errors)} events not created: {errors[0]}", file=sys.stderr)
    return sent


def _write(path: str | None, report: dict[str, Any]) -> None:
    from rollguard.core.report import write_json

    if path:
        write_or_warn(lambda: write_json(report, path), "report")
