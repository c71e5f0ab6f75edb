"""`rollout_request` and `migrate_request` (rollguard.commands): a command line checked into a request,
pure, before any kubeconfig is read; the first problem in the order the options are checked is the one
refused (a --verify file that could not be read included, in its turn)."""

from __future__ import annotations

import pytest

from rollguard.cli import build_parser
from rollguard.commands.migrate import migrate_request
from rollguard.commands.rollout import rollout_request
from rollguard.core.errors import RefusedError
from rollguard.plan.checks import Check
from rollguard.plan.migrate_decide import MigrateAction

DIGEST = "registry.local/shop/api@sha256:" + "0" * 64


def args(*argv: str):
    return build_parser().parse_args(list(argv))


def test_a_rollout_command_line_becomes_its_request() -> None:
    check = Check(name="health", timeout=30)
    request = rollout_request(
        args("rollout", "-l", "app=x", "--image", f"dc/api={DIGEST}", "--timeout", "2m", "--bake", "1m",
             "--no-fail-fast", "--crash-restarts", "5", "--on-paused", "refuse", "--lease-duration", "1m"),
        checks=[check],
    )  # fmt: skip
    assert (request.selector, request.timeout, request.bake, request.lease_seconds) == ("app=x", 120, 60, 60)
    assert [t.ref.key for t in request.targets] == ["dc/api"] and request.targets[0].image == DIGEST
    assert not request.fail_fast and request.crash_restarts == 5 and request.on_paused == "refuse"
    assert request.checks == [check]
    assert request.namespace == "" and request.manifests is None  # the session's, set once resolved


@pytest.mark.parametrize(
    ("argv", "checks", "refused"),
    [
        (["-l", "a b", "--promote-from", "ns"], [], "--promote-from and --tag go together"),
        (["-l", "a b", "--crash-restarts", "5000"], [], "--crash-restarts 5000 is out of range"),
        (["-l", "a b"], RefusedError("--verify 'x' cannot be read"), "selector 'a b' is malformed"),
        (["-l", "app=x", "--lease-duration", "1s"], RefusedError("--verify 'x'"), "--lease-duration '1s'"),
        (["-l", "app=x"], RefusedError("--verify 'x' cannot be read"), "--verify 'x' cannot be read"),
        (["-l", "app=x"], [Check(name="a", timeout=1), Check(name="a", timeout=1)], "check name(s) a used"),
        (["-l", "app=x", "--step-timeout", "5m", "--timeout", "10m"], [], "--timeout"),
        (["-l", "app=x", "--skip-other-kinds"], [], "--skip-other-kinds goes with -f"),
    ],
)
def test_a_rollout_command_line_is_refused_at_its_first_problem(argv, checks, refused) -> None:
    with pytest.raises(RefusedError) as caught:
        rollout_request(args("rollout", *argv), checks=checks)
    assert refused in str(caught.value), str(caught.value)


def test_a_migrate_command_line_becomes_its_request_or_is_refused() -> None:
    request = migrate_request(args("migrate", "-l", "app=x", "--revert", "--timeout", "1m"))
    assert (request.selector, request.action, request.timeout, request.namespace) == (
        "app=x",
        MigrateAction.REVERT,
        60,
        "",
    )
    with pytest.raises(RefusedError, match="--output-dir goes with -o yaml"):
        migrate_request(args("migrate", "-l", "a b", "--output-dir", "/tmp"))
    with pytest.raises(RefusedError, match="malformed"):
        migrate_request(args("migrate", "-l", "a b", "--crash-restarts", "3"))
