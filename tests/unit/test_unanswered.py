"""Why a request got no answer, in plain words (`rollguard.cluster.transport.why_unanswered`), from the
exceptions urllib3 really raises: the TUI's banner and a dry run that timed out printed urllib3's
"Max retries exceeded ... ReadTimeoutError" whole, under "Refused"."""

from __future__ import annotations

import ssl

import pytest
from urllib3.exceptions import (
    ConnectTimeoutError,
    MaxRetryError,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
)

from rollguard.cluster.transport import why_unanswered

CERT_FAILED = (
    "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate (_ssl.c:1006)"
)


def wrapped(reason: Exception) -> MaxRetryError:
    return MaxRetryError(None, "/api/v1/namespaces/shop/pods", reason)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("exc", "said"),
    [
        (
            wrapped(ReadTimeoutError(None, "/x", "Read timed out. (read timeout=30.0)")),
            "no answer within 30s",
        ),  # type: ignore[arg-type]
        (ReadTimeoutError(None, "/x", "Read timed out."), "no answer within 30s"),  # type: ignore[arg-type]
        (wrapped(ConnectTimeoutError(None, "timed out")), "no connection within 5s"),
        (
            wrapped(
                NewConnectionError(
                    None, "Failed to establish a new connection: [Errno 111] Connection refused"
                )
            ),
            "connection refused",
        ),  # type: ignore[arg-type]
        (
            wrapped(NameResolutionError("api.example", None, OSError("Name or service not known"))),
            "its host name does not resolve",
        ),  # type: ignore[arg-type]
        (
            wrapped(SSLError(ssl.SSLCertVerificationError(1, CERT_FAILED))),
            f"TLS failed: {CERT_FAILED}",
        ),
        (
            ProtocolError("Connection aborted.", ConnectionResetError(104, "Connection reset by peer")),
            "the connection was dropped",
        ),
        (TimeoutError("timed out"), "no answer within 30s"),
    ],
)
def test_said_in_plain_words(exc: Exception, said: str) -> None:
    assert why_unanswered(exc, read_timeout=30.0) == said


def test_anything_else_is_kept_short() -> None:
    said = why_unanswered(RuntimeError("x" * 500), read_timeout=30.0)
    assert len(said) == 160 and said.endswith("...")
