"""The repair TUI (`rollguard tui`): a Textual face over `task`'s state model and repair operations.

`task` never imports this package; `rollguard.commands.tui` imports it inside its handler.

Layout, with the direction of imports (never upwards):
- `app` (the App: data loop, dialogs, action flow) imports `screens/` (one module per screen), which
  import `widgets/`; screens and widgets import the app only under ``TYPE_CHECKING`` and reach it as
  ``self.app``. What they share lives below them: `keys` (the app's bindings), `errors`
  (`describe_error`), `messages` (what workers post back).
- `backend/`: the only package that talks to a cluster (through a `rollguard.cluster.api.Api`: the real
  `rollguard.cluster.client.Client` or a test double) or reads the kubeconfig; blocking, so called from thread workers.
- `data`: pure mapping of `task`'s types and objects to `views`; `views`: frozen dataclasses and pure
  formatting, all that screens and widgets see.
"""

from __future__ import annotations

import logging


def main(
    *,
    namespace: str | None = None,
    all_namespaces: bool = False,
    selector: str = "",
    context: str | None = None,
    kubeconfig: str | None = None,
    read_only: bool = False,
) -> int:
    """Run the TUI until the user quits; exit code 0 (2 when the kubeconfig is unusable)."""
    from rollguard.tui.app import RollguardApp
    from rollguard.tui.backend import Backend, Options

    # Library warnings (urllib3 pool, kubernetes) must not scribble over the screen.
    logging.getLogger().addHandler(logging.NullHandler())
    logging.getLogger("urllib3").setLevel(logging.ERROR)
    options = Options(
        namespace=namespace,
        all_namespaces=all_namespaces,
        selector=selector,
        context=context,
        kubeconfig=kubeconfig,
        read_only=read_only,
    )
    backend = Backend(options)
    backend.connect()  # reads the kubeconfig only: a bad one is refused (exit 2) before the screen opens
    app = RollguardApp(backend)
    try:
        app.run()
    finally:
        backend.stop_live()
    return app.return_code or 0
