"""Hostile input for every command: exit 2, a one-line reason, no traceback, nothing changed.

Every case runs through the fault proxy (no faults, only counting) against one shared group: zero
mutating requests may reach the API server (SelfSubjectAccessReviews excepted: they persist
nothing), and the namespace's fingerprint (resourceVersions, generations) must not move.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rollguard.cluster.client import Client
from tests.helpers import chaos as h
from tests.helpers.cluster import NEW, make_group, resource_versions

HUGE = "a" * 100_000
META = "$(touch /tmp/rollguard-pwned);`id`|&>"

# (id, argv after the command name; NS/SEL are replaced, words the reason must contain, in the slice)
# Cluster-less variants use a special kubeconfig: "missing", "empty", "closed", "garbage", "expired", "alice".
CASES: list[tuple[str, str, list[str], list[str], str, bool]] = [
    # rollout: selectors
    (
        "rollout-selector-malformed",
        "rollout",
        ["-l", "app=(shop", "--image", f"dc/dc1={NEW}"],
        ["malformed"],
        "",
        False,
    ),
    (
        "rollout-selector-shell",
        "rollout",
        ["-l", f"app={META}", "--image", f"dc/dc1={NEW}"],
        ["selector"],
        "",
        False,
    ),
    (
        "rollout-selector-unicode",
        "rollout",
        ["-l", "app=shöp-ápi", "--image", f"dc/dc1={NEW}"],
        ["selector"],
        "",
        False,
    ),
    (
        "rollout-selector-huge",
        "rollout",
        ["-l", f"app={HUGE}", "--image", f"dc/dc1={NEW}"],
        ["selector"],
        "",
        True,
    ),
    ("rollout-selector-empty", "rollout", ["-l", "", "--image", f"dc/dc1={NEW}"], ["empty"], "", False),
    (
        "rollout-selector-negated-op",
        "rollout",
        ["-l", "!app=shop", "--image", f"dc/dc1={NEW}"],
        ["selector"],
        "",
        False,
    ),
    (
        "rollout-selector-empty-set",
        "rollout",
        ["-l", "app in ()", "--image", f"dc/dc1={NEW}"],
        ["selector"],
        "",
        False,
    ),
    (
        "rollout-selector-matches-nothing",
        "rollout",
        ["-l", "app=nothing", "--image", f"dc/dc1={NEW}"],
        ["matches no"],
        "",
        False,
    ),
    # rollout: targets
    (
        "rollout-target-unknown-kind",
        "rollout",
        ["--image", f"statefulset/dc1={NEW}"],
        ["unknown kind"],
        "",
        False,
    ),
    ("rollout-target-no-kind", "rollout", ["--image", f"dc1={NEW}"], ["malformed"], "", False),
    ("rollout-target-shell", "rollout", ["--image", f"dc/dc1;{META}={NEW}"], ["malformed"], "", True),
    ("rollout-target-unicode", "rollout", ["--image", f"dc/dç1={NEW}"], ["not a valid"], "", False),
    ("rollout-target-huge", "rollout", ["--image", f"dc/{HUGE}={NEW}"], ["not a valid"], "", False),
    (
        "rollout-target-container-unicode",
        "rollout",
        ["--image", f"dc/dc1/äpp={NEW}"],
        ["not a valid"],
        "",
        False,
    ),
    (
        "rollout-target-unknown",
        "rollout",
        ["--image", f"dc/nope={NEW}"],
        ["not in the rollout group"],
        "",
        False,
    ),
    ("rollout-target-no-equals", "rollout", ["--image", "dc/dc1"], ["no '='"], "", False),
    (
        "rollout-target-twice",
        "rollout",
        ["--image", f"dc/dc1={NEW}", "--image", "dc/dc1=registry.local/x:v3"],
        ["two images"],
        "",
        False,
    ),
    # rollout: image references
    (
        "rollout-ref-uppercase-space",
        "rollout",
        ["--image", "dc/dc1=Registry.local/UPPER:v 2"],
        ["malformed"],
        "",
        False,
    ),
    ("rollout-ref-shell", "rollout", ["--image", f"dc/dc1={META}"], ["malformed"], "", True),
    (
        "rollout-ref-no-tag",
        "rollout",
        ["--image", "dc/dc1=registry.local/shop/api"],
        ["has no tag or digest"],
        "",
        False,
    ),
    (
        "rollout-ref-short-digest",
        "rollout",
        ["--image", "dc/dc1=registry.local/x@sha256:abc"],
        ["malformed"],
        "",
        False,
    ),
    (
        "rollout-ref-huge",
        "rollout",
        ["--image", f"dc/dc1=registry.local/{'x' * 600}:v1"],
        ["malformed"],
        "",
        False,
    ),
    (
        "rollout-ref-newline",
        "rollout",
        ["--image", "dc/dc1=registry.local/x:v2\nrm -rf /"],
        ["malformed"],
        "",
        False,
    ),
    ("rollout-ref-unicode", "rollout", ["--image", "dc/dc1=registry.local/ápi:v2"], ["malformed"], "", False),
    # rollout: durations and numbers
    (
        "rollout-timeout-words",
        "rollout",
        ["--image", f"dc/dc1={NEW}", "--timeout", "ten minutes"],
        ["not a duration"],
        "",
        False,
    ),
    (
        "rollout-timeout-zero",
        "rollout",
        ["--image", f"dc/dc1={NEW}", "--timeout", "0s"],
        ["out of range"],
        "",
        False,
    ),
    (
        "rollout-timeout-25h",
        "rollout",
        ["--image", f"dc/dc1={NEW}", "--timeout", "25h"],
        ["out of range"],
        "",
        False,
    ),
    (
        "rollout-timeout-negative",
        "rollout",
        ["--image", f"dc/dc1={NEW}", "--timeout=-5s"],
        ["not a duration"],
        "",
        False,
    ),
    (
        "rollout-timeout-huge",
        "rollout",
        ["--image", f"dc/dc1={NEW}", "--timeout", "9" * 40 + "s"],
        ["out of range"],
        "",
        False,
    ),
    (
        "rollout-crash-restarts-negative",
        "rollout",
        ["--image", f"dc/dc1={NEW}", "--crash-restarts=-1"],
        ["out of range"],
        "",
        False,
    ),
    (
        "rollout-crash-restarts-huge",
        "rollout",
        ["--image", f"dc/dc1={NEW}", "--crash-restarts", "9" * 30],
        ["out of range"],
        "",
        False,
    ),
    (
        "rollout-on-paused-bogus",
        "rollout",
        ["--image", f"dc/dc1={NEW}", "--on-paused", "ignore"],
        ["invalid choice"],
        "",
        False,
    ),
    ("rollout-no-images", "rollout", [], ["nothing to roll out"], "", False),
    # rollout: namespaces and promotion
    (
        "rollout-namespace-unknown",
        "rollout",
        ["-n", "no-such-namespace", "--image", f"dc/dc1={NEW}"],
        ["does not exist"],
        "",
        False,
    ),
    (
        "rollout-namespace-uppercase",
        "rollout",
        ["-n", "Shop_NS", "--image", f"dc/dc1={NEW}"],
        ["not a valid namespace"],
        "",
        False,
    ),
    (
        "rollout-namespace-shell",
        "rollout",
        ["-n", f"ns;{META}", "--image", f"dc/dc1={NEW}"],
        ["not a valid namespace"],
        "",
        False,
    ),
    (
        "rollout-namespace-unicode",
        "rollout",
        ["-n", "ñs", "--image", f"dc/dc1={NEW}"],
        ["not a valid namespace"],
        "",
        False,
    ),
    (
        "rollout-namespace-huge",
        "rollout",
        ["-n", "a" * 64, "--image", f"dc/dc1={NEW}"],
        ["not a valid namespace"],
        "",
        False,
    ),
    ("rollout-promote-without-tag", "rollout", ["--promote-from", "shop-cd"], ["go together"], "", False),
    (
        "rollout-promote-unknown-namespace",
        "rollout",
        ["--promote-from", "no-such-cd", "--tag", "abc"],
        ["does not exist"],
        "",
        False,
    ),
    (
        "rollout-report-unwritable",
        "rollout",
        ["--image", f"dc/dc1={NEW}", "--report", "/etc/hostname/r.json"],
        ["cannot be written"],
        "",
        False,
    ),
    # rollout: kubeconfigs and credentials
    (
        "rollout-context-unknown",
        "rollout",
        ["--image", f"dc/dc1={NEW}", "--context", "nope"],
        ["context"],
        "",
        False,
    ),
    (
        "rollout-kubeconfig-missing",
        "rollout",
        ["--image", f"dc/dc1={NEW}"],
        ["does not exist"],
        "missing",
        True,
    ),
    ("rollout-kubeconfig-empty", "rollout", ["--image", f"dc/dc1={NEW}"], ["kubeconfig"], "empty", False),
    ("rollout-kubeconfig-garbage", "rollout", ["--image", f"dc/dc1={NEW}"], ["kubeconfig"], "garbage", False),
    (
        "rollout-kubeconfig-closed-port",
        "rollout",
        ["--image", f"dc/dc1={NEW}"],
        ["cannot reach"],
        "closed",
        False,
    ),
    ("rollout-token-expired", "rollout", ["--image", f"dc/dc1={NEW}"], ["401"], "expired", True),
    ("rollout-token-forbidden", "rollout", ["--image", f"dc/dc1={NEW}"], ["not allowed"], "alice", True),
    # status
    ("status-namespace-unknown", "status", ["-n", "no-such-namespace"], ["does not exist"], "", True),
    ("status-namespace-shell", "status", ["-n", f"ns;{META}"], ["not a valid namespace"], "", False),
    ("status-selector-malformed", "status", ["-n", "NS", "-l", "app=(x"], ["malformed"], "", False),
    ("status-selector-huge", "status", ["-n", "NS", "-l", f"a={HUGE}"], ["selector"], "", False),
    ("status-output-bogus", "status", ["-n", "NS", "-o", "yaml"], ["invalid choice"], "", False),
    ("status-closed-port", "status", ["-n", "NS"], ["cannot reach"], "closed", False),
    ("status-token-expired", "status", ["-n", "NS"], ["401"], "expired", False),
    ("status-token-forbidden", "status", ["-n", "NS"], ["not allowed"], "alice", False),
    # drift-check
    ("drift-namespace-unknown", "drift-check", ["-n", "no-such-namespace"], ["does not exist"], "", True),
    ("drift-namespace-unicode", "drift-check", ["-n", "ñs"], ["not a valid namespace"], "", False),
    ("drift-selector-malformed", "drift-check", ["-n", "NS", "-l", "a in (b"], ["selector"], "", False),
    (
        "drift-fail-on-bogus",
        "drift-check",
        ["-n", "NS", "--fail-on", "paused,$(id)"],
        ["unknown finding"],
        "",
        False,
    ),
    (
        "drift-report-unwritable",
        "drift-check",
        ["-n", "NS", "--report", "/etc/hostname/r.json"],
        ["cannot be written"],
        "",
        False,
    ),
    ("drift-closed-port", "drift-check", ["-n", "NS"], ["cannot reach"], "closed", False),
    ("drift-token-expired", "drift-check", ["-n", "NS"], ["401"], "expired", False),
    ("drift-token-forbidden", "drift-check", ["-n", "NS"], ["not allowed"], "alice", False),
    # repairs
    ("revert-nothing-named", "revert", ["-n", "NS"], ["name the workloads"], "", False),
    ("revert-targets-and-selector", "revert", ["-n", "NS", "-l", "SEL", "dc/dc1"], ["not both"], "", False),
    ("revert-target-malformed", "revert", ["-n", "NS", "dc/"], ["malformed"], "", False),
    ("revert-target-unknown", "revert", ["-n", "NS", "dc/nope"], ["nope"], "", False),
    (
        "revert-to-revision-negative",
        "revert",
        ["-n", "NS", "dc/dc1", "--to-revision=-1"],
        ["--to-revision"],
        "",
        False,
    ),
    (
        "revert-to-revision-words",
        "revert",
        ["-n", "NS", "dc/dc1", "--to-revision", "two"],
        ["invalid"],
        "",
        False,
    ),
    (
        "revert-to-revision-missing",
        "revert",
        ["-n", "NS", "dc/dc1", "--to-revision", "99"],
        ["99"],
        "",
        False,
    ),
    ("revert-timeout-zero", "revert", ["-n", "NS", "dc/dc1", "--timeout", "0s"], ["out of range"], "", False),
    ("revert-selector-malformed", "revert", ["-n", "NS", "-l", "app=(x"], ["malformed"], "", False),
    (
        "revert-namespace-unknown",
        "revert",
        ["-n", "no-such-namespace", "dc/dc1"],
        ["no-such-namespace"],
        "",
        False,
    ),
    (
        "revert-report-unwritable",
        "revert",
        ["-n", "NS", "dc/dc1", "--report", "/etc/hostname/r.json"],
        ["cannot be written"],
        "",
        False,
    ),
    ("revert-closed-port", "revert", ["-n", "NS", "-l", "SEL"], ["cannot reach"], "closed", False),
    ("resume-target-shell", "resume", ["-n", "NS", f"dc/dc1;{META}"], ["malformed"], "", True),
    ("resume-target-unicode", "resume", ["-n", "NS", "deploy/wéb"], ["not a valid"], "", False),
    ("resume-token-expired", "resume", ["-n", "NS", "dc/dc1"], ["401"], "expired", False),
    ("redeploy-target-huge", "redeploy", ["-n", "NS", f"deploy/{HUGE}"], ["not a valid"], "", False),
    (
        "redeploy-namespace-shell",
        "redeploy",
        ["-n", f"ns`{META}`", "deploy/web"],
        ["not a valid namespace"],
        "",
        False,
    ),
    ("redeploy-token-forbidden", "redeploy", ["-n", "NS", "deploy/web"], ["not allowed"], "alice", True),
    ("redeploy-selector-nothing", "redeploy", ["-n", "NS", "-l", "app=nothing"], ["nothing"], "", False),
]


@pytest.fixture(scope="module")
def shared_group(sandbox) -> Iterator[tuple[Client, str]]:
    """One group for the whole corpus: nothing may change it, and each case checks that it did not."""
    client = Client.connect(kubeconfig=str(sandbox.kubeconfig))
    with h.scratch_namespace(client, "hostile") as ns:
        make_group(client, ns)
        yield client, ns


def kubeconfig_for(variant: str, proxy, sandbox, tmp: Path) -> Path:
    path = tmp / f"kubeconfig-{variant or 'proxy'}"
    if variant == "missing":
        return tmp / "does-not-exist"
    if variant == "empty":
        path.write_text("")
    elif variant == "garbage":
        path.write_bytes(b"\x00\xff{{{: not yaml ::\n\t- [")
    elif variant == "closed":
        path.write_text(
            "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
            "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
            "current-context: c\n"
        )
    elif variant == "expired":
        proxy.kubeconfig(sandbox.kubeconfig, path)
        path.write_text(path.read_text().replace("admin-token", "expired-token-0000"))
        assert "expired-token-0000" in path.read_text()
    elif variant == "alice":
        proxy.kubeconfig(sandbox.user_kubeconfig("alice"), path)
    else:
        proxy.kubeconfig(sandbox.kubeconfig, path)
    return path


@pytest.mark.parametrize(
    ("command", "args", "words", "variant"),
    [pytest.param(*c[1:5], id=c[0], marks=() if c[5] else pytest.mark.chaos) for c in CASES],
)
def test_hostile_input_is_refused(
    sandbox, proxy, shared_group, tmp_path, ledger_entry, command, args, words, variant
):
    client, namespace = shared_group
    kubeconfig = kubeconfig_for(variant, proxy, sandbox, tmp_path)
    argv = [a.replace("NS", namespace) if a == "NS" else h.SELECTOR if a == "SEL" else a for a in args]
    if command in ("rollout",) and "-n" not in argv:
        argv = ["-n", namespace, *argv]
    if command == "rollout" and "-l" not in argv:
        argv = ["-l", h.SELECTOR, *argv]
    before = resource_versions(client, namespace)
    result = h.finish(h.start(kubeconfig, command, *argv), timeout=90)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    reasons = [line for line in lines if not line.startswith(("usage:", " "))]
    writes = [f"{r.method} {r.path}" for r in proxy.mutating()]
    assert result.code == 2, f"exit {result.code}\n{result.stdout[-800:]}\n{result.stderr[-1500:]}"
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert len(reasons) == 1 and reasons[0].startswith("rollguard"), lines
    for word in words:
        assert word in reasons[0], reasons[0]
    assert len(reasons[0]) < 1000, len(reasons[0])  # a huge input is not echoed back whole
    assert not writes, writes
    assert resource_versions(client, namespace) == before
    ledger_entry.case(
        f"{command}: {ledger_entry.test.split('[', 1)[-1].rstrip(']')}",
        faults={"hostile input": 1},
        states=3,
        detail=reasons[0][:160],
    )
