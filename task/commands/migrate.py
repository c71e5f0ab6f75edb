"""`rollguard migrate`: a group's DeploymentConfigs become Deployments, guarded and reversible.

The same preflight, lock, journal, fencing, report, exit codes and Tekton results as `rollout`
(`rollguard.run.migrate.Migrate`). ``--dry-run`` prints the plan and each Deployment as the server would
store it; ``-o yaml`` writes the converted manifests (stdout, or one file per workload in
``--output-dir``) and changes nothing; ``--finish`` and ``--revert`` end a migration whose DCs are kept.
"""

from __future__ import annotations

import argparse
from pathlib import Path
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
    from rollguard.plan.migrate_decide import MigrateRequest
    from rollguard.run.migrate import Migrate


def register(sub: Any) -> None:
    p = sub.add_parser(
        "migrate",
        help="convert a group's DeploymentConfigs into Deployments, with no downtime and a way back",
        description="Convert every DeploymentConfig matching -l into a Deployment (created scaled as the DC "
        "is, HPAs retargeted), wait until the Deployments are available, then scale the DCs to 0, kept for "
        f"the way back (--revert) until --finish deletes them. {NAMESPACE_RULE}. Any failure puts the group "
        "back: DCs serving at their replicas, Deployments deleted. Refused before any change (exit 2): a DC "
        "paused, rolling out, failed or never completed; what has no Deployment equivalent (Custom strategy, "
        "hooks, spec.test); a Deployment of the same name that is not this migration's; missing permissions. "
        "Exit 0 migrated, 1 failed and reverted, 2 refused, 3 not restored or superseded.",
    )
    p.add_argument("-n", "--namespace", help=NAMESPACE_HELP)
    p.add_argument("-l", "--selector", required=True, help="label selector of the group")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--finish",
        action="store_true",
        help="end a migration whose DCs are kept at 0: delete the DCs and their RCs, close the journal",
    )
    mode.add_argument(
        "--revert",
        action="store_true",
        help="undo a migration whose DCs are kept at 0: the DCs back up and serving, then the Deployments deleted",
    )
    mode.add_argument(
        "--dry-run",
        action="store_true",
        help="run the whole preflight (each Deployment created as a server-side dry run) and print the plan "
        "and each Deployment as the server would store it; change nothing, exit 0 (status dry-run)",
    )
    p.add_argument(
        "-o",
        "--output",
        choices=("yaml",),
        help="write the converted Deployments as YAML manifests (for a Helm chart, Tailor template or kustomize "
        "base) and change nothing: to stdout, or one file per workload with --output-dir",
    )
    p.add_argument(
        "--output-dir", metavar="DIR", help="with -o yaml: write DIR/deployment-NAME.yaml per workload"
    )
    p.add_argument(
        "--pre-hook-as-init-container",
        action="store_true",
        help="convert an execNewPod pre hook into an init container (it then runs in every pod, not once per "
        "rollout); refused otherwise",
    )
    p.add_argument("--timeout", default="10m", metavar="DURATION", help="overall timeout (default 10m)")
    fail_fast_args(p)
    outcome_args(p)
    p.set_defaults(handler=run)


def manifests_yaml(migrate: Migrate) -> dict[str, str]:
    """The converted Deployments as YAML, by workload name (what -o yaml writes)."""
    import yaml

    out = {}
    for wp in migrate.migration.deployments:
        assert wp.manifest is not None
        out[wp.snapshot.ref.name] = yaml.safe_dump(wp.manifest, sort_keys=False, default_flow_style=False)
    return out


def preview(migrate: Migrate, *, output: str | None, output_dir: str | None) -> Report:
    """``--dry-run`` or ``-o yaml``: the whole preflight, then the plan or the manifests; nothing changed."""
    import yaml

    from rollguard.core.report import Report
    from rollguard.core.structs import ExitStatus
    from rollguard.kinds.conversion import scale_ref_text
    from rollguard.plan.preview import planned_results

    plan = migrate.prepare()
    m = migrate.migration
    if output == "yaml":
        docs = manifests_yaml(migrate)
        if output_dir:
            for name, text in docs.items():
                path = Path(output_dir) / f"deployment-{name}.yaml"
                path.write_text(text)
                print(f"wrote {path}")
        else:
            printer("---\n".join(docs.values()).rstrip("\n"))
    else:
        for wp in m.dcs:
            name = wp.snapshot.ref.name
            printer(f"{wp.key}: {m.replicas[name]} replicas -> deployment/{name}; then scaled to 0, kept")
            for note in wp.notes:
                printer(f"  note: {note}")
        for r in m.retargets:
            printer(
                f"horizontalpodautoscaler {r.name}: {scale_ref_text(r.before)} -> {scale_ref_text(r.after)}"
            )
        for key in m.left_alone:
            printer(f"{key}: a Deployment already, left as it is")
        for wp in m.deployments:
            printer(f"# {wp.key} as the server would store it (dry run)")
            printer(yaml.safe_dump(wp.server_view or wp.manifest, sort_keys=False).rstrip("\n"))
        printer(f"dry run: {len(m.dcs)} DeploymentConfigs would be migrated; nothing was changed")
    return Report(
        status=ExitStatus.DRY_RUN,
        command="migrate",
        namespace=plan.namespace,
        selector=plan.selector,
        workloads=planned_results(plan),
    )


def migrate_request(args: argparse.Namespace) -> MigrateRequest:
    """`rollguard migrate`'s arguments checked into a `MigrateRequest`, or RefusedError naming the fix
    (before the session: its namespace is set by `start`)."""
    from rollguard.plan.inputs import parse_duration, parse_selector
    from rollguard.plan.migrate_decide import MigrateAction, MigrateRequest

    if args.output_dir and not args.output:
        raise RefusedError("--output-dir goes with -o yaml", fix="pass -o yaml --output-dir DIR")
    if args.output and (args.finish or args.revert):
        raise RefusedError("-o yaml writes the manifests of a migration", fix="drop --finish/--revert")
    if args.output_dir and not Path(args.output_dir).is_dir():
        raise RefusedError(f"--output-dir {args.output_dir!r} is not a directory", fix="create it first")
    restarts = crash_restarts(args)
    selector = parse_selector(args.selector)
    timeout = parse_duration(args.timeout)
    lease = lease_seconds(args)
    action = (
        MigrateAction.FINISH
        if args.finish
        else MigrateAction.REVERT
        if args.revert
        else MigrateAction.MIGRATE
    )
    return MigrateRequest(
        namespace="",
        selector=selector,
        action=action,
        timeout=timeout,
        pre_hook_as_init_container=args.pre_hook_as_init_container,
        fail_fast=not args.no_fail_fast,
        crash_restarts=restarts,
        lease_seconds=lease,
    )


def start(args: argparse.Namespace, where: Session, request: MigrateRequest) -> Report:
    """The migration (or its preview: ``--dry-run``, ``-o yaml``) in the session's namespace."""
    import dataclasses

    from rollguard.run.migrate import Migrate

    migrate = Migrate(where.client, dataclasses.replace(request, namespace=where.namespace), out=printer)
    if args.dry_run or args.output:
        return preview(migrate, output=args.output, output_dir=args.output_dir)
    return execute(migrate)


def run(args: argparse.Namespace) -> int:
    return run_guarded(
        args,
        command="migrate",
        previewing=bool(args.dry_run or args.output),
        check=lambda: migrate_request(args),
        start=lambda where, request: start(args, where, request),
        heading=not (args.output and not args.output_dir),  # to stdout, the manifests alone
    )
