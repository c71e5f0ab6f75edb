"""Messages the thread workers post to the app and its screens (post_message is thread-safe)."""

from __future__ import annotations

from textual.message import Message

from rollguard.tui.liveness import Liveness
from rollguard.tui.repairs import TrackedRepair
from rollguard.tui.views import DetailView, Inventory, PlanView, ResultView


class Connected(Message):
    """The backend connected (or switched context / namespace)."""

    def __init__(
        self,
        context: str | None,
        namespace: str | None,
        all_namespaces: bool,
        *,
        generation: int | None = None,
    ) -> None:
        super().__init__()
        self.generation = generation  # the load it belongs to (None: any)
        self.context = context
        self.viewed_namespace = namespace  # not `namespace`: Message uses that name for its handlers
        self.all_namespaces = all_namespaces


class InventoryLoaded(Message):
    """A new reading of the workloads (first list, reload or live refresh)."""

    def __init__(
        self, inventory: Inventory, *, live: bool, arrived: float, generation: int | None = None
    ) -> None:
        super().__init__()
        self.generation = generation  # the load it belongs to (None: any)
        self.inventory = inventory
        self.live = live
        self.arrived = arrived  # time.perf_counter() when the API's answers were all in


class PermissionsLoaded(Message):
    """The actions the user may perform, per namespace (from SelfSubjectAccessReviews)."""

    def __init__(self, allowed: dict[str, frozenset[str]], *, generation: int | None = None) -> None:
        super().__init__()
        self.generation = generation  # the load it belongs to (None: any)
        self.allowed = allowed


class Problem(Message):
    """An API or connection error: shown as a notification, never as a traceback."""

    def __init__(self, text: str, *, severity: str = "error", generation: int | None = None) -> None:
        super().__init__()
        self.generation = generation  # the load it belongs to (None: any)
        self.text = text
        self.severity = severity


class DetailLoaded(Message):
    def __init__(self, detail: DetailView) -> None:
        super().__init__()
        self.detail = detail


class PlanLoaded(Message):
    def __init__(self, plan: PlanView) -> None:
        super().__init__()
        self.plan = plan


class ProgressLine(Message):
    """One line of a repair's live progress (posted to the app, which owns the repair)."""

    def __init__(self, repair: TrackedRepair, line: str) -> None:
        super().__init__()
        self.repair = repair
        self.line = line


class ActionFinished(Message):
    """A repair ended (posted to the app; its dialog, open or reopened later, shows the result)."""

    def __init__(self, repair: TrackedRepair, result: ResultView) -> None:
        super().__init__()
        self.repair = repair
        self.result = result


class LivenessChanged(Message):
    """The loader's judgement of the link to the API server (live, reconnecting, disconnected)."""

    def __init__(self, liveness: Liveness, *, generation: int | None = None) -> None:
        super().__init__()
        self.generation = generation  # the load it belongs to (None: any)
        self.liveness = liveness
