"""What the workloads and detail screens share: the repair actions on a selection, and dialogs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from textual import events
from textual.actions import parse as parse_action
from textual.binding import Binding
from textual.screen import ModalScreen

from rollguard.plan.repair_read import ACTIONS
from rollguard.state import assessment
from rollguard.tui import data
from rollguard.tui.views import UNGROUPED, Target, WorkloadRow

if TYPE_CHECKING:
    from rollguard.tui.app import RollguardApp

ACTION_BINDINGS = [
    Binding("u", "resume('selection')", "Resume"),
    Binding("U", "resume('group')", "Resume group"),
    Binding("v", "revert('selection')", "Revert"),
    Binding("V", "revert('group')", "Revert group"),
    # k9s' `r` restarts a Deployment: a redeploy is that; `d` describes, as in k9s
    Binding("r", "redeploy('selection')", "Redeploy"),
    Binding("R", "redeploy('group')", "Redeploy group"),
]
TITLES = {"resume": "Resume", "revert": "Revert", "redeploy": "Redeploy"}
KEYS = {"resume": "u", "revert": "v", "redeploy": "r"}  # an action's key (capital: the whole group)
PaletteEntry = tuple[str, str, Callable[[], object]]  # title, help text, what it does


@dataclass(frozen=True)
class Selection:
    """The workloads an action would act on, and how to name them to the repair operation."""

    rows: tuple[WorkloadRow, ...]
    target: Target
    is_group: bool


def group_selection(rows: list[WorkloadRow], to_revision: int | None = None) -> Selection | None:
    """A whole rollout group: by its selector, or (ungrouped workloads) by name."""
    if not rows:
        return None
    first = rows[0]
    if first.group == UNGROUPED:
        target = Target(first.namespace, refs=tuple(r.ref for r in rows), to_revision=to_revision)
    else:
        target = Target(first.namespace, selector=first.group, to_revision=to_revision)
    return Selection(rows=tuple(rows), target=target, is_group=True)


def workload_selection(row: WorkloadRow, to_revision: int | None = None) -> Selection:
    return Selection(
        rows=(row,), target=Target(row.namespace, refs=(row.ref,), to_revision=to_revision), is_group=False
    )


class ActionsMixin:
    """Resume / revert / redeploy on `selection(scope)`, offered only when allowed and sensible.

    A screen using it implements `selection(scope)`; scope is ``selection`` (what the cursor is on)
    or ``group`` (the whole rollout group of the cursor's workload), or another of its `SCOPES`.
    """

    app: RollguardApp
    SCOPES: tuple[str, ...] = ("selection", "group")

    def selection(self, scope: str) -> Selection | None:
        raise NotImplementedError

    def offers(self, action: str, scope: str) -> bool:
        sel = self.selection(scope)
        if sel is None or not self.app.may(action, sel.target.namespace, {r.kind for r in sel.rows}):
            return False
        if scope == "group" and not sel.is_group:
            return False
        if scope == "group" and self.selection("selection") == sel:
            return False  # the cursor is on the group itself: the plain key already acts on it
        return data.applicable(action, sel.rows, to_revision=sel.target.to_revision)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in TITLES:
            return self.offers(action, str(parameters[0]) if parameters else "selection")
        return True

    def action_label(self, action: str, scope: str) -> str:
        sel = self.selection(scope)
        what = sel.target.label if sel else "?"
        if action == "revert" and sel and sel.target.to_revision is not None:
            return f"{TITLES[action]} {what} to revision {sel.target.to_revision}"
        return f"{TITLES[action]} {what}"

    def confirm_action(self, action: str, scope: str) -> None:
        """Open the confirmation of ``action`` on the selection (named so as not to shadow Widget.run_action)."""
        if not self.offers(action, scope):
            self.app.notify(self.why_not(action, scope), severity="warning")
            return
        sel = self.selection(scope)
        assert sel is not None
        self.app.open_action(
            action, sel.target, group=sel.rows[0].group_key, warning=self.action_warning(action, scope)
        )

    def why_not(self, action: str, scope: str) -> str:
        """Why ``action`` is not offered: the permissions missing, else why it does not apply."""
        sel = self.selection(scope)
        if sel is None:
            return f"{TITLES[action]}: nothing selected"
        if self.app.read_only:
            return f"{TITLES[action]}: read-only (started with --read-only)"
        kinds = {r.kind for r in sel.rows}
        missing = self.app.backend.why_not(action, sel.target.namespace, kinds)
        if missing and not self.app.may(action, sel.target.namespace, kinds):
            return f"{KEYS[action]}: {action} needs {missing}"
        if scope == "group" and self.selection("selection") == sel:
            return (
                f"{TITLES[action]} group: the cursor is on the group itself, {KEYS[action]} acts on all of it"
            )
        return f"{TITLES[action]}: {inapplicable(action, sel.rows, to_revision=sel.target.to_revision)}"

    def why_unoffered(self, action: str, parameters: tuple[object, ...]) -> str:
        """What a key whose action is not offered now says (see `explain_key`); "" to stay silent."""
        if action in TITLES:
            return self.why_not(action, str(parameters[0]) if parameters else "selection")
        return ""

    def on_key(self, event: events.Key) -> None:
        explain_key(self, event)

    def action_warning(self, action: str, scope: str) -> str:
        """A caution the confirm dialog shows above the plan ("" for none); the detail screen's rollback."""
        return ""

    def action_resume(self, scope: str = "selection") -> None:
        self.confirm_action("resume", scope)

    def action_revert(self, scope: str = "selection") -> None:
        self.confirm_action("revert", scope)

    def action_redeploy(self, scope: str = "selection") -> None:
        self.confirm_action("redeploy", scope)

    def palette_commands(self) -> list[PaletteEntry]:
        """One command palette entry per action and scope that the screen offers right now."""
        out: list[PaletteEntry] = []
        for action in ACTIONS:
            for scope in self.SCOPES:
                if self.check_action(action, (scope,)):
                    out.append(
                        (
                            self.action_label(action, scope),
                            f"rollguard {action}: shows what would change, then asks to confirm",
                            partial(self.confirm_action, action, scope),
                        )
                    )
        return out


def inapplicable(action: str, rows: tuple[WorkloadRow, ...], *, to_revision: int | None = None) -> str:
    """Why `data.applicable` says no, in the console's terms."""
    if action == "resume":
        return "nothing to resume: not paused"
    if action == "redeploy":
        return "paused: resume it first (a paused workload cannot start a rollout)"
    if action == "revert" and to_revision is not None:
        if len(rows) != 1:
            return "a revision is chosen for one workload only"
        if not any(f.code == assessment.STUCK for f in rows[0].findings):
            return f"revision {to_revision} is the current one already"
    if action == "revert":
        return "nothing to revert: healthy, and no earlier revision"
    return "not available here"


def explain_key(screen: Any, event: events.Key) -> None:
    """A key bound (on ``screen``'s class) to an action not offered now says why, instead of nothing.

    Textual drops the key of a binding whose `check_action` is false; the screen sees the key first (it
    bubbles up to the app, which runs bindings last), so it can say `why_unoffered` and stop it here.
    """
    for binding in type(screen).BINDINGS:
        if not isinstance(binding, Binding) or event.key not in binding.key.split(","):
            continue
        _namespace, name, parameters = parse_action(binding.action)
        if screen.check_action(name, parameters):
            return
        why = screen.why_unoffered(name, parameters)
        if why:
            screen.app.notify(why, severity="warning", timeout=4)
            event.stop()
            event.prevent_default()
        return


class Dialog(ModalScreen[Any]):
    """A modal dialog: while one is open the live refresh holds still."""

    app: RollguardApp

    def on_mount(self) -> None:
        self.app.dialog_opened()

    def on_unmount(self) -> None:
        self.app.dialog_closed()
