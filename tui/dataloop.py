"""The app's data loop: connect, read, follow the watches, probe the server, and say how fresh it all is.

One loader (a thread worker) at a time owns what the backend holds. A switch of namespace or context
starts a new loader and cancels the old one, which may still be in the middle of a read or of starting
its watches: every step a loader takes on the backend runs under the backend's lock and only while the
loader is the current one (`Superseded` otherwise), and everything it posts carries its generation, which
the app drops once a newer load began. So the loader left behind can neither stop the new one's watches
(the 9-of-14 empty table of issue 30) nor show the old namespace's rows under the new name.

Freshness: the header reads `backend.pulse` (`rollguard.tui.backend.watchful`) on a one-second tick, so a
hung server ("no answer from the API server for 8s") shows within a few seconds although the request
that waits on it has not failed yet; the link's state (`Liveness`) says reconnecting or disconnected
after failures. While a dialog is open the table is not refreshed: it says `paused`, not `live`.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from textual import on, work
from textual.screen import Screen
from textual.worker import Worker, get_current_worker

from rollguard.core.errors import ServerError, TooManyRequests, Unreachable
from rollguard.tui.backend import Backend
from rollguard.tui.backend.core import Superseded
from rollguard.tui.errors import describe_error
from rollguard.tui.keysink import SinkingApp
from rollguard.tui.liveness import Freshness, Link, Liveness, backoff, link_after
from rollguard.tui.messages import (
    Connected,
    InventoryLoaded,
    LivenessChanged,
    PermissionsLoaded,
    Problem,
)
from rollguard.tui.views import Inventory

Clock = Callable[[], dt.datetime]
T = TypeVar("T")


def transient(exc: BaseException) -> bool:
    """An outage worth retrying (the server down, overloaded or restarting), not a refusal to fix."""
    return isinstance(exc, Unreachable | ServerError | TooManyRequests | TimeoutError | OSError)


class DataLoop(SinkingApp):
    """The loader, the live refresh and the freshness of what the screens show (see the module)."""

    LIVE_TICK = 0.5
    PROBE_EVERY = 2.0  # seconds between liveness probes while live
    CLOCK_TICK = 5.0  # seconds between re-judgements of time-based findings without any event

    backend: Backend
    clock: Clock
    live_enabled: bool
    inventory: Inventory | None
    allowed: dict[str, frozenset[str]]
    permissions_known: bool
    timings: dict[str, float]
    live_refreshes: int
    liveness: Liveness

    def init_data_loop(self) -> None:
        self._reviewing: set[str] = set()  # namespaces whose access reviews a worker is asking now
        self._generation = 0  # bumped by each load: what an older loader posts is dropped
        self._dialogs = 0
        self._paused = threading.Event()
        self._paused_since: float | None = None
        self._dirty = threading.Event()
        self._retry = threading.Event()

    @property
    def read_only(self) -> bool:
        return self.backend.options.read_only

    def on_unmount(self) -> None:
        """The app ends: no loader is current any more, and the live caches stop with their threads.

        Textual cancels the workers, but a thread worker only learns it at its next look, and the caches'
        watch threads are not workers at all: without this they outlived the app (they ended only with
        the process, which `rollguard tui` is, but a test's app is not: issue 30's hang of the TUI tests,
        a file's later tests starved by the watch threads of the earlier ones). The loader may hold the
        backend's lock for a step (a read bounded by the request timeout): then a thread of its own waits
        for it, so that quitting never waits on the API server."""
        self._generation += 1  # every step of a loader still running is `Superseded` from now
        self._retry.set()
        if self.backend.lock.acquire(blocking=False):
            try:
                self.backend.stop_live()
            finally:
                self.backend.lock.release()
            return
        threading.Thread(target=self._stop_live_later, name="tui-stop-live", daemon=True).start()

    def _stop_live_later(self) -> None:
        with self.backend.lock:
            self.backend.stop_live()

    def load(
        self, *, context: str | None = None, namespace: str | None = None, all_namespaces: bool = False
    ) -> None:
        """(Re)connect and read; then follow changes through watches (unless live is off).

        Switching context or namespace clears the table at once: the old cluster's rows must not stand
        under the new name while the new cluster has not answered.
        """
        self.permissions_known = False
        self.allowed = {}
        self._reviewing = set()
        self._generation += 1
        if context is not None or namespace is not None or all_namespaces:
            self.inventory = None
            self._set_liveness(Liveness(Link.CONNECTING))
            for screen in self._screens():
                if hasattr(screen, "inventory_cleared"):
                    screen.inventory_cleared()
        self._retry.set()  # a loader waiting to reconnect (to the old context) ends now
        self._loader(self._generation, context, namespace, all_namespaces)

    def current(self, generation: int | None) -> bool:
        """Whether what a worker of ``generation`` posted is still to be shown (None: not tied to a load)."""
        return generation is None or generation == self._generation

    def _stepper(self, worker: Worker[Any], generation: int) -> Callable[..., Any]:
        """``step(fn, *args)``: ``fn`` under the backend's lock, only while this loader is the current one."""

        def step(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
            with self.backend.lock:
                if worker.is_cancelled or not self.current(generation):
                    raise Superseded
                return fn(*args, **kwargs)

        return step

    @work(thread=True, exclusive=True, group="loader", exit_on_error=False)
    def _loader(
        self, generation: int, context: str | None, namespace: str | None, all_namespaces: bool
    ) -> None:
        worker = get_current_worker()
        backend = self.backend
        step = self._stepper(worker, generation)

        def superseded() -> bool:
            return worker.is_cancelled or not self.current(generation)

        def begin() -> None:
            if namespace is not None or all_namespaces:
                backend.namespace = namespace
                backend.all_namespaces = all_namespaces
            if context is not None or backend.client is None:
                backend.connect(context)
            else:
                backend.stop_live()

        try:
            step(begin)
            where = (backend.context_name, backend.namespace, backend.all_namespaces)
            self.post_message(Connected(*where, generation=generation))
        except Superseded:
            return
        except Exception as exc:  # the kubeconfig: nothing to retry
            self.post_message(Problem(describe_error(exc)))
            return

        def partial(inventory: Inventory) -> None:  # what a long first read has found so far
            self.post_message(
                InventoryLoaded(inventory, live=False, arrived=time.perf_counter(), generation=generation)
            )

        failures = 0
        contact: float | None = None  # the last answer: a read, or a probe while following

        def answered() -> float:
            nonlocal contact
            contact = time.monotonic()
            return contact

        self._retry.clear()
        while not superseded():
            try:
                inventory = step(
                    backend.read, on_partial=partial, for_live=self.live_enabled, stop=superseded
                )
                answered()
                arrived = backend.timings["listed"]
                self.post_message(
                    InventoryLoaded(inventory, live=False, arrived=arrived, generation=generation)
                )
                if not self.live_enabled:
                    allowed = step(self._eager_permissions, inventory)
                    self.post_message(PermissionsLoaded(allowed, generation=generation))
                    return
                # Watches first, access reviews after: with -A the reviews are asked lazily (`may`),
                # one namespace at a time as its rows are acted on, never 22 per namespace up front.
                step(backend.start_live)
                failures = 0
                self.post_message(
                    LivenessChanged(Liveness(Link.LIVE, contact=answered()), generation=generation)
                )
                allowed = step(self._eager_permissions, inventory)
                self.post_message(PermissionsLoaded(allowed, generation=generation))
                self._follow(step, superseded, generation, answered)
                return
            except Superseded:
                return
            except Exception as exc:  # the API, anything: a notification, not a traceback
                if superseded():
                    return
                said = describe_error(exc)
                if not transient(exc) or not self.live_enabled:
                    self.post_message(Problem(said, generation=generation))
                    self.post_message(
                        LivenessChanged(Liveness(Link.DISCONNECTED, contact, said), generation=generation)
                    )
                    return
                try:
                    step(backend.stop_live)
                except Superseded:
                    return
                failures += 1
                if failures == 1:
                    self.post_message(Problem(said, severity="warning", generation=generation))
                liveness = Liveness(link_after(failures), contact, said, failures)
                self.post_message(LivenessChanged(liveness, generation=generation))
                self._retry.wait(backoff(failures))
                self._retry.clear()

    def _follow(
        self,
        step: Callable[..., Any],
        superseded: Callable[[], bool],
        generation: int,
        answered: Callable[[], float],
    ) -> None:
        """Follow the watches; probe the server every `PROBE_EVERY` s (raises when it stops answering;
        ``answered`` records each answer, so that the stale age after a failure counts from the last one,
        not from the first read);
        re-judge time-based findings every `CLOCK_TICK` s although nothing changed (lease expiry,
        deadlines, ages); with -A and a selector, start watching namespaces that appeared.

        An event re-assesses its namespace only; the clock tick re-judges every namespace, at most a
        quarter of the time (a whole cluster's assessment takes seconds: the tick must not take it all)."""
        backend = self.backend
        last_probe = last_tick = time.monotonic()
        everything = False
        while not superseded():
            changed = backend.wait(self.LIVE_TICK)
            now = time.monotonic()
            if changed:
                self._dirty.set()
            if now - last_probe >= self.PROBE_EVERY:
                backend.probe()  # not under the lock: a hung server must not hold up a switch
                last_probe = now
                self.post_message(
                    LivenessChanged(Liveness(Link.LIVE, contact=answered()), generation=generation)
                )
            if now - last_tick >= max(self.CLOCK_TICK, 4 * backend.timings.get("everything_s", 0.0)):
                last_tick = now
                everything = True
                self._dirty.set()  # the same objects judged at a later now
                if step(backend.follow_new_namespaces):
                    self._dirty.set()
            if superseded() or not self._dirty.is_set() or self._paused.is_set():
                continue  # paused: a dialog is open; the change is kept for when it closes
            self._dirty.clear()
            inventory = step(backend.cached, everything=everything)
            everything = False
            arrived = backend.timings["listed"]
            self.post_message(InventoryLoaded(inventory, live=True, arrived=arrived, generation=generation))

    def reconnect_now(self) -> None:
        """Cut the reconnect backoff short (the `r`eload key while disconnected)."""
        self._retry.set()

    def refresh_now(self) -> None:
        """A fresh list from the API (ctrl+r), without restarting the watches; while the server does not
        answer, a reconnect attempt now instead."""
        if not self.liveness.live and self.live_enabled:
            self.reconnect_now()
            return
        self._refresh_once(self._generation)

    @work(thread=True, exclusive=True, group="refresh", exit_on_error=False)
    def _refresh_once(self, generation: int) -> None:
        step = self._stepper(get_current_worker(), generation)
        try:
            inventory = step(self.backend.read)
            self.post_message(
                InventoryLoaded(inventory, live=False, arrived=time.perf_counter(), generation=generation)
            )
            allowed = step(self._eager_permissions, inventory)
            self.post_message(PermissionsLoaded(allowed, generation=generation))
        except Superseded:
            return
        except Exception as exc:
            self.post_message(Problem(describe_error(exc), generation=generation))

    def _eager_permissions(self, inventory: Inventory) -> dict[str, frozenset[str]]:
        """One namespace: its permissions now (a few reviews). All namespaces: none yet; `may` asks
        for a namespace's when a screen first offers an action there (100 namespaces would be 2,200
        reviews before anything else)."""
        if self.backend.all_namespaces and not self.read_only:
            return {}
        return self.backend.allowed(inventory)

    def _review(self, namespace: str) -> None:
        if namespace in self._reviewing:
            return
        self._reviewing.add(namespace)
        self._review_worker(namespace, self._generation)

    @work(thread=True, group="permissions", exit_on_error=False)
    def _review_worker(self, namespace: str, generation: int) -> None:
        inventory = self.inventory
        kinds = {row.kind for row in inventory.rows if row.namespace == namespace} if inventory else set()
        try:
            allowed = self.backend.permissions(namespace, kinds)
        except Exception as exc:  # unanswerable: offer nothing there, say why
            self.post_message(Problem(describe_error(exc)))
            allowed = frozenset()
        self.post_message(PermissionsLoaded({namespace: allowed}, generation=generation))

    # -- what the loader posts (an older loader's is dropped) ------------------------------------------

    @on(Connected)
    def _connected(self, message: Connected) -> None:
        if not self.current(message.generation):
            return
        where = "all namespaces" if message.all_namespaces else (message.viewed_namespace or "default")
        self.sub_title = f"{message.context or 'current context'} / {where}"
        for screen in self._screens():
            if hasattr(screen, "connection_changed"):
                screen.connection_changed()

    @on(LivenessChanged)
    def _liveness_changed(self, message: LivenessChanged) -> None:
        if self.current(message.generation):
            self._set_liveness(message.liveness)

    def _set_liveness(self, liveness: Liveness) -> None:
        changed = liveness.link is not self.liveness.link
        self.liveness = liveness
        if changed:
            self._freshness_changed()

    def _freshness_changed(self) -> None:
        for screen in self._screens():
            if hasattr(screen, "liveness_changed"):
                screen.liveness_changed()

    @on(InventoryLoaded)
    def _inventory_loaded(self, message: InventoryLoaded) -> None:
        if not self.current(message.generation):
            return
        old = self.inventory.errors if self.inventory else ()
        for problem in message.inventory.errors:
            if problem not in old:
                self.notify(problem, title="rollguard", severity="warning", timeout=8)
        self.inventory = message.inventory
        self.live_refreshes += message.live
        self.timings.setdefault("first_arrived", message.arrived)
        self.timings["arrived"] = message.arrived
        for screen in self._screens():
            if hasattr(screen, "inventory_changed"):
                screen.inventory_changed(message.inventory, live=message.live)
        self.call_after_refresh(self._shown)

    def _shown(self) -> None:
        self.timings["shown"] = time.perf_counter()
        self.timings.setdefault("first_shown", self.timings["shown"])

    @on(PermissionsLoaded)
    def _permissions_loaded(self, message: PermissionsLoaded) -> None:
        if not self.current(message.generation):
            return
        self.allowed = {**self.allowed, **message.allowed}  # lazy reviews add namespaces one by one
        self.permissions_known = True
        for screen in self._screens():
            if hasattr(screen, "bindings_changed"):
                screen.bindings_changed()
        self.screen.refresh_bindings()

    @on(Problem)
    def _problem(self, message: Problem) -> None:
        if self.current(message.generation):
            self.notify(message.text, title="rollguard", severity=message.severity, timeout=8)  # type: ignore[arg-type]

    def _screens(self) -> Iterable[Screen[Any]]:
        return list(self.screen_stack)

    # -- freshness -----------------------------------------------------------------------------------

    def freshness(self) -> Freshness:
        """What the header says now: the link, the oldest unanswered request, a dialog's pause."""
        return Freshness(
            self.liveness,
            silent=self.backend.pulse.silent_for(),
            paused_since=self._paused_since,
        )

    # -- dialogs pause the live refresh -----------------------------------------------------------------

    def dialog_opened(self) -> None:
        self._dialogs += 1
        if not self._paused.is_set():
            self._paused_since = time.monotonic()
        self._paused.set()
        self._freshness_changed()

    def dialog_closed(self) -> None:
        self._dialogs = max(self._dialogs - 1, 0)
        if self._dialogs == 0:
            self._paused.clear()
            self._paused_since = None
            self.backend.poke()  # apply what changed meanwhile now, not at the next event
            self._freshness_changed()

    @property
    def refresh_paused(self) -> bool:
        """Whether the table's refresh is held while a dialog is open: a seam for the tests
        (tests/tui/test_app.py), which the app itself reads as ``_paused``."""
        return self._paused.is_set()
