"""rollguard's own error hierarchy.

API errors map HTTP statuses to classes (like kopf) and always chain the transport's exception as
``__cause__``; input errors carry the fix a user should apply. Exit codes live here so the CLI and the
engine agree on them.
"""

from __future__ import annotations

import re
from typing import Any

EXIT_OK = 0
EXIT_REVERTED = 1
EXIT_REFUSED = 2
EXIT_INCONSISTENT = 3


class RollguardError(Exception):
    """Base of every error rollguard raises on purpose."""


class RefusedError(RollguardError):
    """Bad input or a precondition that is not met: nothing was changed (exit 2)."""

    def __init__(self, problem: str, *, fix: str = "") -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}" + (f"; {fix}" if fix else ""))


class NoSuchNamespace(RefusedError):
    """The namespace named does not exist (a 404 on it)."""

    def __init__(self, namespace: str) -> None:
        super().__init__(
            f"namespace {namespace!r} does not exist", fix="check --namespace (kubectl get namespaces)"
        )


class LockHeldError(RefusedError):
    """Another run holds the group's lock."""

    def __init__(self, *, lease: str, holder: str, expires_in: float) -> None:
        self.holder = holder
        super().__init__(
            f"rollout group is locked by {holder} (Lease {lease}, expires in {max(expires_in, 0):.0f}s)",
            fix="wait for that run to finish, or let its lease expire if it died",
        )


class ApiError(RollguardError):
    """An error answer from the Kubernetes API (or no answer at all)."""

    status: int = 0

    def __init__(self, message: str, *, status: int = 0, reason: str = "", retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.status = status or type(self).status
        self.reason = reason
        self.retry_after = retry_after


class BadRequest(ApiError):
    status = 400


class NoLog(BadRequest):
    """400 from `pods/P/log`: the kubelet has no such log (no previous instance, a container waiting to
    start); ``message`` is the kubelet's own sentence, which says which."""


LOGIN_FIX = (
    "log in again (oc login) or refresh the kubeconfig's credentials (an expired token is the usual cause); "
    "kubectl config view --minify shows which ones are used"
)


class Unauthorized(ApiError):
    """401: the credentials were not accepted (expired or revoked token, wrong certificate)."""

    status = 401

    def __init__(self, message: str, **kwargs: Any) -> None:
        super().__init__(f"{message}; {LOGIN_FIX}", **kwargs)


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    status = 409


class Gone(ApiError):
    """The watch's resourceVersion is too old: re-list."""

    status = 410


class Invalid(ApiError):
    status = 422


class TooManyRequests(ApiError):
    status = 429


class ServerError(ApiError):
    status = 500


class Unreachable(ApiError):
    """The connection failed or dropped: no HTTP status."""


_BY_STATUS: dict[int, type[ApiError]] = {
    cls.status: cls
    for cls in (BadRequest, Unauthorized, Forbidden, NotFound, Conflict, Gone, Invalid, TooManyRequests)
}


def error_for_status(status: int) -> type[ApiError]:
    """The ApiError subclass for an HTTP status (5xx all map to ServerError)."""
    if status >= 500:
        return ServerError
    return _BY_STATUS.get(status, ApiError)


def is_retryable(error: ApiError) -> bool:
    """Errors that a repeated request may cure: overload, server faults, dropped connections."""
    return isinstance(error, TooManyRequests | ServerError | Unreachable)


class RolloutFailed(RollguardError):
    """A workload's rollout failed; ``workload`` names it, the message says why."""

    def __init__(self, message: str, *, workload: str) -> None:
        super().__init__(message)
        self.workload = workload


class WorkloadDeleted(RolloutFailed):
    """Someone else deleted a workload while a run was on it: nothing left to change or revert."""


class CheckFailed(RollguardError):
    """A post-rollout check (``--verify``, ``--bake``) failed: the run's cause, naming the check and its
    evidence; it fails the run like a failed rollout (the group is reverted). The message starts
    ``check 'NAME' (KIND) failed:``, the words `failed_check` reads back from a journal's error."""

    def __init__(self, message: str, *, check: str) -> None:
        super().__init__(message)
        self.check = check


_FAILED_CHECK = re.compile(r"^check '([a-z0-9-]+)' \(([a-z]+)\) failed: ")


def failed_check(error: str) -> str | None:
    """The check a run's first error names when a check failed it (``status`` names it), else None."""
    match = _FAILED_CHECK.match(error or "")
    return match.group(1) if match else None


class Interrupted(RollguardError):
    """The run was asked to stop (SIGTERM, e.g. Tekton's step timeout, or SIGINT: Ctrl-C)."""


class Superseded(Exception):
    """The run lost its group's lock (frozen past its lease, renewals cut off): it must write nothing more.

    Deliberately *not* a `RollguardError`: every handler that cleans up after a failure (revert the
    group, save the journal, record an Event) catches RollguardError, and cleaning up means writing.
    This one only stops at the run's skeleton, which reports status ``superseded`` (exit 3).
    ``holder``: who held the lease when it was lost ("" when nobody did).
    """

    def __init__(self, message: str, *, holder: str = "") -> None:
        super().__init__(message)
        self.holder = holder
