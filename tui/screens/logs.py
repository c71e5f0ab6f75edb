"""`l`: the logs of a workload's (or a revision's) newest pod, followed live (`Backend.follow_logs`).

The lines arrive in a thread worker, which queues them; the UI thread appends what is queued ten times a
second. Each stream has a ``stop`` event of the page's own, set when the page is unmounted (closed, or
the app ends) or the stream is replaced (`c`); a stream asked for after the page closed is not started.
So no thread outlives the page, whatever order a burst of keys opened and closed it in (the worker's
cancel event alone was not enough: a follow thread kept polling for restarts after its page had gone,
and the event loop's executor, waiting for it, never closed: issue 30). The page keeps the last `MAX_LINES` lines, wraps them (at 80 columns the end of an error line
is the part that says why; a resize wraps them again) and follows the end unless scrolled up. `c` shows the pod's next container
(the page starts on the one that is not ready, if any): the stream is cut and the page starts again on
the same pod, so a newer pod appearing meanwhile does not switch pods under the reader. `t` shows each
line's time as the kubelet stamped it (k9s' `t`: the stream starts again with ``timestamps=true``);
`/` searches, `n`/`N` go from match to match (the page stops following the end until `G`).
"""

from __future__ import annotations

import queue
import threading
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.binding import Binding, BindingType
from textual.widget import Widget
from textual.widgets import RichLog

from rollguard.tui.errors import describe_error
from rollguard.tui.logs import Heading, Line, LogEvent, Note, PageEvent, Shown, next_container
from rollguard.tui.screens.scroll import SCROLL_BINDINGS, ScrollPage
from rollguard.tui.search import marked
from rollguard.tui.views import WorkloadRow

MAX_LINES = 5000
DRAIN_EVERY = 0.1  # seconds between looks at the worker's queue: one refresh per look, not per line


def render(event: PageEvent, *, pattern: str = "") -> Text:
    if isinstance(event, Heading):
        text = Text(f"── {event.text}", style="bold cyan")
    elif isinstance(event, Note):
        text = Text(event.text, style="yellow" if event.warning else "dim")
    else:
        text = Text(event.text, style="bold red" if _is_error(_message(event.text)) else "")
    return marked(text, pattern)


def _message(text: str) -> str:
    """A line without the kubelet's timestamp (``2024-05-01T10:00:00.000000000Z ``), if it has one."""
    head, _, rest = text.partition(" ")
    return rest if len(head) > 20 and head[:4].isdigit() and head.endswith("Z") else text


def _is_error(text: str) -> bool:
    head = text.lstrip()[:12].upper()
    return head.startswith(("FATAL", "ERROR", "PANIC", "E0", "E1", "TRACEBACK"))


class LogsScreen(ScrollPage):
    """Read-only and live; j/k/g/G scroll, c the next container, esc closes (and ends the stream)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *SCROLL_BINDINGS,
        Binding("c", "next_container", "Next container"),
        Binding("t", "timestamps", "Timestamps"),
    ]

    def __init__(self, row: WorkloadRow, *, revision: int | None = None, pod: str | None = None) -> None:
        super().__init__()
        self.row = row
        self.revision = revision
        self.pod = pod
        self.container: str | None = None  # chosen with `c`; None: the one `container_to_show` picks
        self.shown: Shown | None = None
        self.events: list[PageEvent] = []  # what the page shows
        # (generation, event): a stream cut by `c` may still queue a line; the page drops old generations
        self._queue: queue.SimpleQueue[tuple[int, LogEvent]] = queue.SimpleQueue()
        self._generation = 0
        self._wrapped_at: int | None = None  # the width the shown lines were wrapped at
        self._stop: threading.Event | None = None  # the running stream's
        self._closed = False  # unmounted: no stream is started any more
        self.timestamps = False  # `t`: each line with the kubelet's time of it

    def heading(self) -> Text:
        which = f"revision {self.revision}'s newest pod" if self.revision is not None else "newest pod"
        which = f"pod {self.pod}" if self.pod else f"the {which}"
        if self.container:
            which += f", container {self.container}"
        stamped = "  ·  timestamps" if self.timestamps else ""
        return Text.assemble((self.row.ref, "bold"), f" in {self.row.namespace}  ·  logs of {which}{stamped}")

    def body(self) -> Widget:
        return RichLog(id="page-box", max_lines=MAX_LINES, wrap=True, auto_scroll=True, markup=False)

    @property
    def lines(self) -> list[str]:
        """What the container printed, as shown so far (for tests)."""
        return [e.text for e in self.events if isinstance(e, Line)]

    @property
    def text(self) -> str:
        return "\n".join(e.text for e in self.events)

    def on_mount(self) -> None:
        super().on_mount()
        self.set_interval(DRAIN_EVERY, self._drain)

    def load(self) -> None:
        """(Re)start the stream, the running one cut first; none once the page is closed."""
        self._cut()
        if self._closed:
            return
        self._stop = threading.Event()
        self._stream(self._stop)

    def _cut(self) -> None:
        if self._stop is not None:
            self._stop.set()

    def on_unmount(self) -> None:
        self._closed = True
        self._cut()

    @work(thread=True, exclusive=True, group="logs", exit_on_error=False)
    def _stream(self, stop: threading.Event) -> None:
        generation, pod, container, stamped = self._generation, self.pod, self.container, self.timestamps
        try:
            for event in self.app.backend.follow_logs(
                self.row, revision=self.revision, pod=pod, container=container, stop=stop, timestamps=stamped
            ):
                self._queue.put((generation, event))
        except Exception as exc:
            self._queue.put(
                (generation, Note(f"could not read the logs: {describe_error(exc)}", warning=True))
            )

    def action_next_container(self) -> None:
        """Start again on the same pod's next container (said why not, when there is none)."""
        shown = self.shown
        if shown is None or len(shown.containers) < 2:
            why = "no pod shown yet" if shown is None else f"pod {shown.pod} has one container"
            self.notify(f"next container: {why}", timeout=4)
            return
        self.pod, self.container = shown.pod, next_container(shown)
        self._restart()

    def action_timestamps(self) -> None:
        """`t`: the same pod's log again, each line with its time (or without, again)."""
        self.timestamps = not self.timestamps
        if self.shown is not None:  # the same pod, not a newer one that appeared meanwhile
            self.pod, self.container = self.shown.pod, self.shown.container
        self._restart()

    def _restart(self) -> None:
        self._generation += 1  # before the worker is cut: whatever it still queues is dropped
        self.shown = None
        self.events.clear()
        self.match_line = None
        self.query_one("#page-box", RichLog).clear()
        self.show_heading()
        self.load()  # cuts the running stream first

    def _drain(self) -> None:
        """Show what the worker queued since the last look: one refresh per tick, however many lines."""
        batch: list[PageEvent] = []
        while True:
            try:
                generation, event = self._queue.get_nowait()
            except queue.Empty:
                break
            if generation != self._generation:
                continue
            if isinstance(event, Shown):
                self.shown = event  # not a line of the page: what `c` steps from
            else:
                batch.append(event)
        self.events.extend(batch)
        del self.events[:-MAX_LINES]  # what the log keeps, so a re-wrap has no more to write
        log = self.query_one("#page-box", RichLog)
        width = log.scrollable_content_region.width or None  # wrap at the page, not at the console's 80
        if width != self._wrapped_at:  # first lines, or the page was resized: wrap all again at its width
            self._wrapped_at = width
            log.clear()
            batch = self.events
        for event in batch:
            log.write(render(event, pattern=self.pattern), width=width)

    # -- search (`ScrollPage`) -------------------------------------------------------------------------

    def search_lines(self) -> list[str]:
        return [render(e).plain for e in self.events]

    def highlight(self) -> None:
        """Every line again, the matches marked (the next `_drain` marks new lines as it writes them)."""
        log = self.query_one("#page-box", RichLog)
        log.clear()
        for event in self.events:
            log.write(render(event, pattern=self.pattern), width=self._wrapped_at, scroll_end=False)

    def scroll_to_line(self, index: int) -> None:
        self.query_one("#page-box", RichLog).auto_scroll = False  # stay on the match while lines arrive
        super().scroll_to_line(index)

    def action_scroll(self, where: str) -> None:
        if where == "end":  # G: follow the end again
            self.query_one("#page-box", RichLog).auto_scroll = True
        super().action_scroll(where)
