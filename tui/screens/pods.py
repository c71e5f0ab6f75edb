"""`:pods` (k9s' jump): the pods of the DCs and Deployments in view, or of one group (`:pods SELECTOR`:
the workloads it matches; `p` on a group's page: its members), each with its workload, revision and how it
runs; `l` or Enter shows its logs.

Read-only: no key here writes. The rows come from the live caches through a thread worker
(`Backend.pods`, judged again at each change of the inventory while the page is open), never from the UI
thread; a read that fails is said in the title and the last rows stay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static

from rollguard.tui.errors import describe_error
from rollguard.tui.screens.logs import LogsScreen
from rollguard.tui.views import Inventory, PodRow, WorkloadRow, age
from rollguard.tui.widgets.keybar import KeyBar
from rollguard.tui.widgets.nav import NavTable

if TYPE_CHECKING:
    from rollguard.tui.app import RollguardApp

COLUMNS = ("Pod", "Workload", "Revision", "Status", "Ready", "Restarts", "Node", "Age")
BAD = ("CrashLoopBackOff", "Error", "ImagePullBackOff", "ErrImagePull", "Failed", "OOMKilled")


class PodsScreen(Screen[None]):
    """Pods by namespace and workload; j/k/g/G move, `l`/Enter logs, esc back."""

    app: RollguardApp
    BINDINGS = [
        Binding("escape,backspace", "back", "Back"),
        Binding("enter,l", "logs", "Logs"),
        Binding("ctrl+r", "reload", "Reload", show=False),
    ]

    def __init__(
        self,
        *,
        selector: str = "",
        members: tuple[WorkloadRow, ...] = (),
        title: str = "",
    ) -> None:
        super().__init__()
        self.selector = selector  # "": every pod in view; else the pods of the workloads it matches
        self.members = members  # a group's page: the pods of these workloads only
        self.page_title = title or (f"pods of group {selector}" if selector else "pods")
        self.pods: list[PodRow] = []
        self.error = ""
        self.loaded = False

    def compose(self) -> ComposeResult:
        yield Static(self.heading(), id="status")
        yield NavTable(id="pods", cursor_type="row")
        yield KeyBar()

    def heading(self) -> Text:
        backend = self.app.backend
        where = "all namespaces" if backend.all_namespaces else (backend.namespace or "default")
        if self.members:
            where = self.members[0].namespace
        text = Text.assemble((self.page_title, "bold"), f" in {where}")
        if self.loaded:
            text.append(f"  ·  {len(self.pods)} pods")
        else:
            text.append("  ·  reading…")
        if self.error:
            text.append(f"  ·  {self.error}", style="bold red")
        return text

    def on_mount(self) -> None:
        table = self.query_one("#pods", DataTable)
        table.add_columns(*(("Namespace",) if self.app.backend.all_namespaces else ()), *COLUMNS)
        table.focus()
        self.load()

    @work(thread=True, exclusive=True, group="pods", exit_on_error=False)
    def load(self) -> None:
        refs = frozenset(r.ref for r in self.members) if self.members else None
        namespace = self.members[0].namespace if self.members else None
        try:
            pods, error = self.app.backend.pods(selector=self.selector, refs=refs, namespace=namespace), ""
        except Exception as exc:
            pods, error = None, f"could not read the pods: {describe_error(exc)}"
        self.app.call_from_thread(self._show, pods, error)

    def _show(self, pods: list[PodRow] | None, error: str) -> None:
        if not self.is_attached:
            return  # closed meanwhile
        self.error, self.loaded = error, True
        if pods is not None:
            self.pods = pods
            table = self.query_one("#pods", DataTable)
            keep = table.cursor_row
            table.clear()
            now = self.app.clock()
            for pod in pods:
                status = Text(pod.status, style="bold red" if pod.status in BAD else "")
                cells = (
                    pod.name, pod.workload, pod.revision, status, pod.ready, str(pod.restarts), pod.node,
                    age(pod.created, now),
                )  # fmt: skip
                table.add_row(*((pod.namespace,) if self.app.backend.all_namespaces else ()), *cells)
            if pods:
                table.move_cursor(row=min(keep, len(pods) - 1))
        self.query_one("#status", Static).update(self.heading())

    def inventory_changed(self, inventory: Inventory, *, live: bool) -> None:
        """The workloads changed (live): read the pods again."""
        self.load()

    @property
    def current(self) -> PodRow | None:
        table = self.query_one("#pods", DataTable)
        return self.pods[table.cursor_row] if 0 <= table.cursor_row < len(self.pods) else None

    def workload_row(self, pod: PodRow) -> WorkloadRow | None:
        inventory = self.app.inventory
        rows = inventory.rows if inventory is not None else ()
        return next((r for r in rows if r.namespace == pod.namespace and r.ref == pod.workload), None)

    @on(DataTable.RowSelected, "#pods")
    def _selected(self, _event: DataTable.RowSelected) -> None:
        self.action_logs()

    def action_logs(self) -> None:
        """The pod's logs (a crash loop's previous container first), followed."""
        pod = self.current
        if pod is None:
            self.notify("logs: no pod selected", timeout=3)
            return
        row = self.workload_row(pod)
        if row is None:
            self.notify(f"logs: {pod.workload} is no longer in view", severity="warning", timeout=4)
            return
        self.app.push_screen(LogsScreen(row, pod=pod.name))

    def action_reload(self) -> None:
        self.load()

    def action_back(self) -> None:
        self.app.pop_screen()
