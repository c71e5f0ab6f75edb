"""How the TUI words an exception for the user: one line, for a notification or a dialog.

In a module of its own because the app and the screens both need it, and screens must not import
the app at run time.
"""

from __future__ import annotations

from rollguard.core.errors import RollguardError


def describe_error(exc: BaseException) -> str:
    """One line: our errors carry their own text (the problem and its fix); others get their type."""
    if isinstance(exc, RollguardError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
