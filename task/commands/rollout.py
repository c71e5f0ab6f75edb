"""`rollguard rollout`: the guarded group rollout (the Tekton task's entrypoint)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from rollguard.commands.common import NAMESPACE_HELP, NAMESPACE_RULE, Session, lease_seconds, printer
from rollguard.commands.guarded import (
    crash_restarts,
    execute,
    fail_fast_args,
    outcome_args,
    run_guarded,
)
from rollguard.core.errors import RefusedError

if TYPE_CHECKING:  # imported when run: the CLI starts without the engine
    from rollguard.core.report import Report
    from rollguard.plan.checks import Check
    from rollguard.plan.manifests import Source
    from rollguard.plan.rollout_decide import RolloutRequest
    from rollguard.run.rollout import Rollout


def register(sub: Any) -> None:
    p = sub.add_parser(
        "rollout",
        help="roll out every workload matching a selector, all-or-nothing",
        description="Roll out the group (every DeploymentConfig and Deployment matching -l) so that it ends "
        f"all-new or all-old. {NAMESPACE_RULE}. Refused before any change (exit 2): bad input, a --report "
        "or --results-dir that cannot be written, a workload that never completed a rollout (nothing to "
        "revert to; --allow-never-completed accepts it), a member it does not change that is failing "
        "(--allow-failing accepts it) or left on an unverified change by a killed run, missing permissions, a held lock or a workload "
        "claimed by a run of another group. Exit 0 rolled out, 1 failed and reverted, 2 refused, 3 not "
        "restored (status inconsistent) or the group lost to another run (status superseded).",
    )
    p.add_argument("-n", "--namespace", help=NAMESPACE_HELP)
    p.add_argument("-l", "--selector", required=True, help="label selector of the rollout group")
    p.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="TARGET=REF",
        help="set an image: dc/NAME[/CONTAINER]=REF or deployment/NAME[/CONTAINER]=REF (repeatable)",
    )
    p.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="PATH",
        help="the group's workloads as manifests (repeatable): a file, a directory of *.yaml/*.yml/*.json, or "
        "- for standard input (multi-document YAML and kind: List, as helm template, oc process and "
        "kustomize build print); each DC/Deployment is merged onto the live one (created when absent) "
        "in the run's one write",
    )
    p.add_argument(
        "--skip-other-kinds",
        action="store_true",
        help="with -f: leave objects other than DCs and Deployments alone (listed as skipped) instead of "
        "refusing",
    )
    p.add_argument("--promote-from", metavar="NAMESPACE", help="copy TAG from this namespace's ImageStreams")
    p.add_argument("--tag", metavar="TAG", help="the tag to promote (with --promote-from)")
    p.add_argument(
        "--timeout", default="10m", metavar="DURATION", help="overall rollout timeout (default 10m)"
    )
    p.add_argument(
        "--step-timeout",
        metavar="DURATION",
        help="the deadline of the CI step running this (the Tekton Task passes its own): refuse a"
        " --timeout whose rollout plus revert cannot end before it",
    )
    p.add_argument(
        "--on-paused",
        choices=("take-over", "refuse"),
        default="take-over",
        help="what to do with workloads found paused (default take-over)",
    )
    fail_fast_args(p)
    p.add_argument(
        "--allow-never-completed",
        action="store_true",
        help="accept workloads that never completed a rollout (a failed run then has no verified state "
        "to revert them to); refused by default",
    )
    p.add_argument(
        "--allow-failing",
        action="store_true",
        help="roll out beside group members this run does not change whose last rollout failed (left as "
        "they are, named in the report and the summary); refused by default",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="run the whole preflight (every write as a server-side dry run) and print each workload's "
        "change as a diff of its template and labels; change nothing, exit 0 (report status dry-run, each "
        "workload planned or unchanged)",
    )
    p.add_argument(
        "--verify",
        action="append",
        default=[],
        metavar="FILE",
        help="post-rollout checks (YAML: a list of http, job and prometheus checks, see the README; "
        "repeatable): run once the group rolled out, before it is called succeeded; a failed check reverts "
        "the group (exit 1)",
    )
    p.add_argument(
        "--bake",
        metavar="DURATION",
        help="after the group is ready, keep watching it this long (e.g. 2m): a pod restart, a crash loop, "
        "readiness lost or a workload degraded fails the run and reverts the group",
    )
    outcome_args(p)
    p.set_defaults(handler=run)


def preview(rollout: Rollout) -> Report:
    """``--dry-run``: the rollout's whole preflight, then its plan as diffs; no lock, no journal, no write."""
    from rollguard.core.report import Report
    from rollguard.core.structs import ExitStatus
    from rollguard.plan.preview import plan_diff, planned_results
    from rollguard.run.verify import validated

    plan = rollout.prepare()
    printer("\n".join(plan_diff(plan)))
    for check in rollout.request.checks:
        printer(f"verify: {check.kind} {check.name}: valid; not run (--dry-run)")
    changed = sum(wp.needs_change for wp in plan.workloads)
    printer(f"dry run: {changed} of {len(plan.workloads)} workloads would change; nothing was changed")
    # status dry-run, never succeeded: nothing was rolled out; the workloads say what would change
    return Report(
        status=ExitStatus.DRY_RUN,
        command="rollout",
        namespace=plan.namespace,
        selector=plan.selector,
        workloads=planned_results(plan),
        checks=validated(rollout.request.checks, bake=rollout.request.bake),
    )


def read_checks(path: str) -> list[Any]:
    """The checks of ``--verify FILE`` (Job manifests read relative to it); refused when unreadable."""
    from pathlib import Path

    from rollguard.plan.checks import parse_checks

    file = Path(path)
    try:
        text = file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise RefusedError(
            f"--verify {path!r} cannot be read: {getattr(exc, 'strerror', None) or exc}", fix="check the path"
        ) from exc
    return parse_checks(text, source=path, read=lambda name: (file.parent / name).read_text())


def rollout_request(args: argparse.Namespace, *, checks: list[Check] | RefusedError) -> RolloutRequest:
    """`rollguard rollout`'s arguments checked into a `RolloutRequest`, or RefusedError naming the fix
    (pure: the ``--verify`` files are read before, ``checks`` being their refusal when one could not be
    read, raised in its turn). The namespace and the ``-f`` manifests are not in it yet: they come with
    the session (`placed`)."""
    from rollguard.plan.inputs import (
        check_step_budget,
        parse_duration,
        parse_image_target,
        parse_namespace,
        parse_selector,
    )
    from rollguard.plan.rollout_decide import RolloutRequest

    if bool(args.promote_from) != bool(args.tag):
        raise RefusedError("--promote-from and --tag go together", fix="pass both, or neither")
    restarts = crash_restarts(args)
    selector = parse_selector(args.selector)
    targets = [parse_image_target(t) for t in args.image]
    timeout = parse_duration(args.timeout)
    lease = lease_seconds(args)
    if isinstance(checks, RefusedError):
        raise checks
    names = [c.name for c in checks]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise RefusedError(
            f"--verify: check name(s) {', '.join(twice)} used in more than one file",
            fix="give each check its own name",
        )
    bake = parse_duration(args.bake, flag="--bake") if args.bake else 0
    if args.step_timeout is not None:
        step_timeout = parse_duration(args.step_timeout, flag="--step-timeout")
        verifying = max([bake, *(c.timeout for c in checks)])
        check_step_budget(timeout=timeout, step_timeout=step_timeout, verify=verifying)
    promote_from = parse_namespace(args.promote_from) if args.promote_from else None
    if args.skip_other_kinds and not args.filename:
        raise RefusedError("--skip-other-kinds goes with -f", fix="pass -f PATH, or drop --skip-other-kinds")
    return RolloutRequest(
        namespace="",
        selector=selector,
        targets=targets,
        promote_from=promote_from,
        tag=args.tag,
        timeout=timeout,
        on_paused=args.on_paused,
        fail_fast=not args.no_fail_fast,
        crash_restarts=restarts,
        allow_never_completed=args.allow_never_completed,
        allow_failing=args.allow_failing,
        skip_other_kinds=args.skip_other_kinds,
        lease_seconds=lease,
        checks=checks,
        bake=bake,
    )


def placed(request: RolloutRequest, sources: list[Source] | None, *, namespace: str) -> RolloutRequest:
    """The request in the session's namespace, with the ``-f`` manifests parsed for it (refused when
    one names another namespace)."""
    import dataclasses

    from rollguard.plan.manifests import parse

    manifests = parse(sources, namespace=namespace) if sources is not None else None
    return dataclasses.replace(request, namespace=namespace, manifests=manifests)


def read_inputs(args: argparse.Namespace) -> tuple[RolloutRequest, list[Source] | None]:
    """Every argument checked and every input file read (the ``--verify`` checks, the ``-f`` sources),
    before the session: bad input is refused without a cluster."""
    from rollguard.plan.manifests import read_sources

    checks: list[Check] | RefusedError
    try:
        checks = [check for path in args.verify for check in read_checks(path)]
    except RefusedError as exc:  # refused in its turn, after the options checked before it
        checks = exc
    request = rollout_request(args, checks=checks)
    return request, read_sources(args.filename) if args.filename else None


def start(
    args: argparse.Namespace, where: Session, inputs: tuple[RolloutRequest, list[Source] | None]
) -> Report:
    """The rollout (or its ``--dry-run`` preview) in the session's namespace."""
    from rollguard.run.rollout import Rollout

    request, sources = inputs
    client = where.client
    # its preflight needs whole lists before it decides: no small first page
    client.first_page = client.page_size
    rollout = Rollout(client, placed(request, sources, namespace=where.namespace), out=printer)
    return preview(rollout) if args.dry_run else execute(rollout)


def run(args: argparse.Namespace) -> int:
    return run_guarded(
        args,
        command="rollout",
        previewing=args.dry_run,
        check=lambda: read_inputs(args),
        start=lambda where, inputs: start(args, where, inputs),
    )
