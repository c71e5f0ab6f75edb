"""Confirm an action, then follow it: the plan (images and paused, before and after), the equivalent
command line, the live progress and the result, in one dialog."""

from __future__ import annotations

import enum
import time
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, DataTable, Input, Label, RichLog, Static

from rollguard.core.images import short_image
from rollguard.tui.errors import describe_error
from rollguard.tui.liveness import ago
from rollguard.tui.messages import PlanLoaded
from rollguard.tui.repairs import TrackedRepair, elapsed
from rollguard.tui.screens.base import TITLES, Dialog
from rollguard.tui.views import Change, PlanView, ResultView, Target
from rollguard.tui.widgets.armed import ArmedButton

if TYPE_CHECKING:
    from rollguard.tui.app import RollguardApp

COLUMNS = ("Workload", "Image before", "Image after", "Paused", "Revision")
# below NARROW columns the headers are short and a "(runs …)" note takes its own line, so that the
# table fits the dialog and never scrolls sideways (the Revision column was cut at 80 columns)
NARROW = 100
NARROW_COLUMNS = ("Workload", "Before", "After", "Paused", "Rev")
PLANNING = "Reading what would change (dry run)…"


def _images(change: Change, *, narrow: bool = False) -> tuple[Text, Text]:
    containers = sorted(set(change.images_before) | set(change.images_after))
    before, after = Text(), Text()
    for i, c in enumerate(containers):
        prefix = f"{c}=" if len(containers) > 1 else ""
        old, new = change.images_before.get(c, ""), change.images_after.get(c, "")
        if i:
            before.append("\n")
            after.append("\n")
        before.append(prefix + short_image(old))
        after.append(prefix + short_image(new), style="bold yellow" if old != new else "")
        running = change.running.get(c)
        if running and running != old:
            before.append(f"{chr(10) if narrow else ' '}(runs {short_image(running)})", style="dim")
            if narrow:
                after.append("\n")  # the next container's images stay side by side
    return before, after


def change_cells(change: Change, *, narrow: bool = False) -> tuple[Text | str, ...]:
    before, after = _images(change, narrow=narrow)
    yes_no = {True: "yes", False: "no"}
    paused = Text(f"{yes_no[change.paused_before]} → {yes_no[change.paused_after]}")
    if change.paused_before != change.paused_after:
        paused.stylize("bold yellow")
    revision = str(change.revision_before)
    if change.revision_after is not None and change.revision_after != change.revision_before:
        revision += f" → {change.revision_after}"
    return (change.ref, before, after, paused, revision)


DISCARDS = "discards the edit someone else made"  # rollguard.plan.repair_decide.discarded_edit's words


def discarded_edits(changes: tuple[Change, ...]) -> list[str]:
    """``dc/b: discards the edit someone else made during run ...``: a revert throwing away a colleague's
    edit the journal recorded (an `inconsistent` group's hotfix), said above the plan, in the words the
    CLI prints."""
    return [f"{c.ref}: {note}" for c in changes for note in c.note.split("; ") if note.startswith(DISCARDS)]


def folded_notes(changes: tuple[Change, ...]) -> list[str]:
    """Per-workload notes, one line per distinct note: ``dc/a, dc/b: target: ...``."""
    by_note: dict[str, list[str]] = {}
    for change in changes:
        for note in filter(None, change.note.split("; ")):
            by_note.setdefault(note, []).append(change.ref)
    if len(changes) > 1:
        return [
            f"{'all' if len(refs) == len(changes) else ', '.join(refs)}: {note}"
            for note, refs in by_note.items()
        ]
    return list(by_note)


class DialogState(enum.StrEnum):
    """Where the dialog stands: planning -> ready (or refused, or unplanned) -> running -> done."""

    PLANNING = "planning"  # the dry run is being read
    READY = "ready"  # the plan is shown: confirm or cancel
    REFUSED = "refused"  # the plan would be refused (exit 2): nothing to confirm
    UNPLANNED = "unplanned"  # the dry run got no answer or failed otherwise: nothing to confirm
    RUNNING = "running"  # confirmed: the action runs, its progress below
    DONE = "done"  # the result is shown


class ConfirmScreen(Dialog):
    """Plan, confirm, run, result (`DialogState`). Dismisses with the result or None.

    Nothing that a reflex or a burst of typing can press confirms: focus starts on Cancel (Enter
    cancels); a workload's action needs the focus moved to Confirm (tab) and Enter pressed there once it
    is armed (`rollguard.tui.widgets.armed`); a group's needs its name typed. No letter confirms (`y`
    is k9s's YAML key).
    A confirmed repair belongs to the app (`rollguard.tui.repairs.TrackedRepair`): esc while it runs sends
    the dialog to the background, and `b` on the workloads screen reopens it (``repair=``).
    """

    app: RollguardApp
    BINDINGS = [
        Binding("escape,n", "cancel", "Cancel / close (while it runs: to the background)"),
        # the equivalent command to the terminal's clipboard (OSC 52: works over SSH and in tmux with
        # set-clipboard on); a copy changes nothing, so a stray `c` is harmless
        Binding("c", "copy_command", "Copy the command"),
        # a modal screen hides the app's own `q`: quitting here asks first while the repair runs
        Binding("q,ctrl+c", "app.quit", "Quit (while it runs: asks wait, or stop it and quit)"),
        # tab from Cancel goes to Confirm, as the dialog says (the plan's table and the notes come
        # before Confirm in the focus chain: one tab landed on the table, Enter there did nothing)
        Binding("tab", "tab", "Next", show=False),
    ]

    def __init__(
        self,
        action: str,
        target: Target,
        *,
        group: str = "",
        repair: TrackedRepair | None = None,
        warning: str = "",
    ) -> None:
        super().__init__()
        self.warning = warning  # e.g. a rollback to a never-verified revision: shown above the plan
        self.action = action
        self.target = target
        self.group = group
        self.repair = repair
        self.state = DialogState.PLANNING
        self.plan: PlanView | None = repair.plan if repair else None
        self.result: ResultView | None = None
        # a group action is confirmed by typing the group's name, not by one key
        self.typed_name = target.selector or (target.label if len(target.refs) > 1 else "")

    def compose(self) -> ComposeResult:
        title = f"{TITLES[self.action]} {self.target.label} in {self.target.namespace}"
        if self.target.to_revision is not None:
            title += f" to revision {self.target.to_revision}"
        with Vertical(classes="dialog confirm"):
            yield Label(title, classes="dialog-title")
            if self.warning:
                yield Static(Text(f"⚠ {self.warning}", style="bold yellow"), id="warning")
            yield Static(id="discards")  # someone's edit the plan throws away (shown once it is read)
            yield Static(PLANNING, id="summary")
            yield DataTable(id="changes", cursor_type="none", show_cursor=False)
            yield Static(id="command")
            with VerticalScroll(id="notes-box"):
                yield Static(id="notes")
            # min_width 1: RichLog wraps at 78 columns at least by default, which cut progress lines
            # in an 80-column terminal's dialog
            yield RichLog(id="progress", wrap=True, markup=False, max_lines=500, min_width=1)
            yield Static(id="result")
            with Horizontal(classes="buttons"):
                if self.typed_name:
                    yield Input(placeholder=f"type {self.typed_name}", id="typed")
                label = "Confirm" if self.typed_name else "Confirm (tab, enter)"
                yield ArmedButton(label, id="confirm", variant="error", disabled=True)
                yield Button("Cancel (esc)", id="cancel")

    @property
    def narrow(self) -> bool:
        return self.app.size.width < NARROW

    def on_mount(self) -> None:  # Dialog.on_mount runs too (Textual calls each class's handler)
        self.query_one("#changes", DataTable).add_columns(*(NARROW_COLUMNS if self.narrow else COLUMNS))
        self.query_one("#progress", RichLog).display = False
        self.query_one("#changes", DataTable).display = False
        self.query_one("#discards", Static).display = False
        if self.typed_name:
            typed = self.query_one("#typed", Input)
            typed.display = False
            typed.cursor_blink = not self.app.static
        self.query_one("#cancel", Button).focus()
        if self.repair is None:
            self._plan()
            self.set_interval(1.0, self._planning_tick)
            return
        # reopened from the background: the same plan, the progress so far, the result if it ended
        assert self.plan is not None
        self._plan_loaded(PlanLoaded(self.plan))
        self._show_running()
        log = self.query_one("#progress", RichLog)
        for line in self.repair.lines:
            log.write(line)
        if self.repair.result is not None:
            self.repair_finished(self.repair.result)

    def _planning_tick(self) -> None:
        """While the dry run waits on the API: say so, and that esc cancels (nothing was changed)."""
        if self.state is not DialogState.PLANNING:
            return
        hung = self.app.freshness().hung_for(time.monotonic())
        text = PLANNING
        if hung:
            text += f" No answer from the API server for {ago(hung)}; esc cancels (nothing was changed)."
        self.query_one("#summary", Static).update(text)

    @work(thread=True, exit_on_error=False, group="plan")
    def _plan(self) -> None:
        try:
            plan = self.app.backend.plan(self.action, self.target)
        except Exception as exc:
            # no answer, or a failure that is not a refusal: said as what it is, never as "Refused"
            plan = PlanView(self.action, self.target, (), "", unplanned=describe_error(exc))
        self.post_message(PlanLoaded(plan))

    @on(PlanLoaded)
    def _plan_loaded(self, message: PlanLoaded) -> None:
        plan = self.plan = message.plan
        table = self.query_one("#changes", DataTable)
        table.clear()
        for change in plan.changes:
            cells = change_cells(change, narrow=self.narrow)
            height = max(str(cell).count("\n") + 1 for cell in cells)
            table.add_row(*cells, height=height)
        table.display = bool(plan.changes)
        discards = discarded_edits(plan.changes)
        folded = [n for n in folded_notes(plan.changes) if DISCARDS not in n]
        notes = [f"• {n}" for n in plan.notes] + [f"• {n}" for n in folded]
        self.query_one("#notes", Static).update("\n".join(notes))
        self.query_one("#notes-box").display = bool(notes)
        lost = self.query_one("#discards", Static)
        lost.update(Text("\n".join(f"⚠ {d}" for d in discards), style="bold yellow"))
        lost.display = bool(discards)
        if plan.command:
            self.query_one("#command", Static).update(
                Text.assemble(
                    ("$ ", "dim"), (plan.command, "bold"), ("" if self.narrow else "  (c copies it)", "dim")
                )
            )
        if self.repair is not None:
            return  # reopened: it was confirmed already
        summary = self.query_one("#summary", Static)
        if plan.refusal or plan.unplanned:
            self.state = DialogState.REFUSED if plan.refusal else DialogState.UNPLANNED
            said = (
                f"Refused, nothing would change: {plan.refusal}"
                if plan.refusal
                else f"Could not work out what would change (nothing was changed; try again): {plan.unplanned}"
            )
            summary.update(Text(said, style="bold red"))
            self.query_one("#confirm", Button).display = False
            self.query_one("#cancel", Button).label = "Close (esc)"
            return
        self.state = DialogState.READY
        changed = sum(1 for c in plan.changes if c.changed)
        how = (
            f"type {self.typed_name} below and press Enter"
            if self.typed_name
            else "move to Confirm (tab) and press Enter"
        )
        summary.update(f"{changed} of {len(plan.changes)} workloads change. To carry it out, {how}:")
        if self.typed_name:
            typed = self.query_one("#typed", Input)
            typed.display = True
            typed.focus()
        else:
            self.query_one("#confirm", ArmedButton).offer()
            self.query_one("#cancel", Button).focus()  # Enter on a reflex cancels
        self.refresh_bindings()

    @property
    def name_typed(self) -> bool:
        return not self.typed_name or self.query_one("#typed", Input).value.strip() == self.typed_name

    @on(Input.Changed, "#typed")
    def _typed(self, _event: Input.Changed) -> None:
        button = self.query_one("#confirm", ArmedButton)
        if self.state is DialogState.READY and self.name_typed:
            button.offer()
        else:
            button.disabled = True

    @on(Input.Submitted, "#typed")
    def _typed_submitted(self, _event: Input.Submitted) -> None:
        if self.name_typed:
            self.action_confirm()
        else:
            self.app.notify(f"type {self.typed_name} exactly to confirm, or esc", severity="warning")

    def action_copy_command(self) -> None:
        command = self.plan.command if self.plan else ""
        if not command:
            self.app.notify("no command to copy yet", severity="warning", timeout=3)
            return
        self.app.copy_to_clipboard(command)
        self.app.notify(f"copied to the clipboard (OSC 52): {command}", markup=False, timeout=4)

    def action_tab(self) -> None:
        """Tab: from Cancel straight to Confirm once it is offered; elsewhere the next in the chain
        (shift+tab still reaches the notes and the plan's table)."""
        confirm = self.query_one("#confirm", ArmedButton)
        focused = self.focused
        if focused is not None and focused.id == "cancel" and not confirm.disabled and confirm.display:
            confirm.focus()
        else:
            self.focus_next()

    @on(ArmedButton.NotYet)
    def _not_yet(self) -> None:
        self.app.notify("Confirm is armed a moment after it has the focus: press Enter again", timeout=3)

    @on(Button.Pressed, "#confirm")
    def _confirm_pressed(self) -> None:
        self.action_confirm()

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    def action_confirm(self) -> None:
        if self.state is not DialogState.READY or not self.name_typed or self.plan is None:
            return
        self.repair = TrackedRepair(plan=self.plan, group=self.group)
        self._show_running()
        self.app.start_repair(self.repair)

    def _show_running(self) -> None:
        self.state = DialogState.RUNNING
        if self.typed_name:
            self.query_one("#typed", Input).display = False
        self.query_one("#confirm", Button).display = False
        cancel = self.query_one("#cancel", Button)
        cancel.label = "Background (esc)"  # the repair goes on; `b` reopens this
        cancel.refresh(layout=True)  # Button.label does not re-measure the button: the label was cut
        cancel.focus()
        self.update_elapsed()
        self.query_one("#progress", RichLog).display = True
        self.query_one("#notes-box").display = False  # room for the progress; the plan stays above
        self.set_interval(1.0, self.update_elapsed)
        self.refresh_bindings()

    def update_elapsed(self) -> None:
        if self.state is DialogState.RUNNING and self.repair is not None:
            took = elapsed(time.monotonic() - self.repair.started)
            self.query_one("#summary", Static).update(
                Text(f"Running… {took} (progress below; esc: to the background, b reopens)", style="bold")
            )

    def repair_progress(self, line: str) -> None:
        """The app forwards each progress line of this dialog's repair."""
        self.query_one("#progress", RichLog).write(line)

    def repair_finished(self, result: ResultView) -> None:
        self.result = result
        self.state = DialogState.DONE
        style = "bold green" if result.ok else "bold red"
        text = Text.assemble((f"{result.status} (exit {result.exit_code}): ", style), result.summary)
        for err in result.errors:
            text.append(f"\n• {err}")
        self.query_one("#summary", Static).update(text)
        cancel = self.query_one("#cancel", Button)
        cancel.label = "Close (esc)"
        cancel.refresh(layout=True)
        cancel.display = True
        cancel.focus()
        self.refresh_bindings()

    def action_cancel(self) -> None:
        if self.state is DialogState.RUNNING:
            self.app.notify(
                f"{self.repair.what if self.repair else 'the repair'} goes on in the background; b reopens it",
            )
            self.dismiss(None)
            return
        self.dismiss(self.result)
