"""Permissions and repairs: which actions the user may take, the plan a dialog shows, and carrying it out.

Each (verb, resource, namespace) is asked once per connection (a SelfSubjectAccessReview) and remembered,
so that the footer can say what is missing without asking again (`why_not`). The plan is the repair's
own read-only preflight (`rollguard.plan.repair_read`), and `execute` carries out that very plan, so that a
workload changed since the dialog opened is refused, not overwritten. Read-only mode refuses here, in
one place, whatever the screens offer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

from rollguard.cluster.access import check_access
from rollguard.core.errors import EXIT_REFUSED, RefusedError
from rollguard.core.resources import Resource
from rollguard.core.structs import ExitStatus
from rollguard.plan.repair_read import ACTIONS, plan_repair
from rollguard.run.repair import Repair
from rollguard.tui import data
from rollguard.tui.backend.core import Core
from rollguard.tui.views import Inventory, PlanView, ResultView, Target, command_line

Printer = Callable[[str], None]
ACTION_TIMEOUT = 600  # seconds a repair started from the TUI may watch its rollouts


class Actions(Core):
    """Access reviews, repair plans and their execution."""

    def _may(self, verb: str, res: Resource, namespace: str) -> bool:
        """One SelfSubjectAccessReview, remembered per connection; an unanswerable one counts as no."""
        key = (verb, res.label, namespace)
        if key not in self._access:
            try:
                check_access(self.api, [(verb, res, namespace)])
                self._access[key] = True
            except RefusedError:
                self._access[key] = False
        return self._access[key]

    def permissions(self, namespace: str, kinds: Iterable[str]) -> frozenset[str]:
        """The actions the user may perform on workloads of all ``kinds`` in ``namespace``.

        Reviewed per kind and verb (patch deployments is not update deploymentconfigs): each kind's
        answer is kept in `by_kind`, so that a user who may patch Deployments only gets actions on them.
        """
        if self.options.read_only:
            return frozenset()
        per_kind = []
        for kind in sorted(set(kinds)):
            allowed = frozenset(
                action
                for action in ACTIONS
                if all(self._may(verb, res, ns) for verb, res, ns in data.needs(action, namespace, {kind}))
            )
            self.by_kind[(namespace, kind)] = allowed
            per_kind.append(allowed)
        return frozenset.intersection(*per_kind) if per_kind else frozenset()

    def why_not(self, action: str, namespace: str, kinds: Iterable[str]) -> str:
        """What the user lacks for ``action`` (from the reviews already answered; no API call)."""
        return data.missing_text(data.needs(action, namespace, set(kinds)), self._access)

    def allowed(self, inventory: Inventory) -> dict[str, frozenset[str]]:
        """`permissions` for every namespace in view, a few namespaces at a time."""
        kinds: dict[str, set[str]] = {}
        for row in inventory.rows:
            kinds.setdefault(row.namespace, set()).add(row.kind)
        if self.options.read_only:
            return {ns: frozenset() for ns in kinds}
        with ThreadPoolExecutor(max_workers=4) as pool:
            return dict(pool.map(lambda item: (item[0], self.permissions(*item)), kinds.items()))

    def plan(self, action: str, target: Target) -> PlanView:
        """The repair's preflight and plan (read-only), as the confirmation dialog shows it."""
        command = command_line(action, target, context=self.context, kubeconfig=self.options.kubeconfig)
        try:
            plan = plan_repair(
                self.api,
                action=action,
                namespace=target.namespace,
                targets=target.refs,
                selector=target.selector or None,
                to_revision=target.to_revision,
            )
        except RefusedError as exc:
            return PlanView(action, target, (), command, refusal=str(exc))
        return data.plan_view(action, target, plan, command)

    def execute(self, plan: PlanView, out: Printer, cancel: threading.Event) -> ResultView:
        """Carry out the plan the user confirmed (the very one shown: a workload changed by someone else
        since is not overwritten), reporting progress lines to ``out``."""
        if self.options.read_only:
            return ResultView(ExitStatus.REFUSED, EXIT_REFUSED, "read-only mode: no action is performed")
        if plan.handle is None or plan.refusal or plan.unplanned:
            return ResultView(
                ExitStatus.REFUSED, EXIT_REFUSED, plan.refusal or plan.unplanned or "nothing to do"
            )
        repair = Repair(self.writer or self.api, plan.handle, timeout=ACTION_TIMEOUT, out=out, cancel=cancel)
        return data.result_view(repair.execute())
