"""Fencing and one owner per workload (issue 14, points 1 and 2), on the live sandbox.

Run A goes through the fault proxy, so every request it sends is on record (with the time the proxy
received it); run B goes to the API server directly. A is frozen with SIGSTOP (a node under memory
pressure, a partitioned step) past its lease, or its renewals are cut off by the proxy; B takes the
group over. Whatever A does once it wakes, the proxy's records must show no mutating request of A's
reaching the API server after the loss, A must exit 3 with report status ``superseded`` naming who
holds the group, and B's result must stand on the live group.

Overlapping groups (``app=shop`` and ``tier=backend`` both matching dc/a) run at once: one is refused
(exit 2, naming the holder) and the group ends consistent; one selector spelled two ways is one group
(one Lease, one journal); ``status`` and ``drift-check`` name the workload in two groups.
"""

from __future__ import annotations

import json
import re
import signal
import time

import pytest

from rollguard.cluster.claims import REGISTER, claims_of
from rollguard.cluster.journal import DATA_KEY, JOURNAL_LABEL, group_name
from rollguard.cluster.lock import fence_margin, read_lease
from rollguard.core.errors import NotFound
from rollguard.core.resources import CONFIG_MAPS, LEASES
from rollguard.plan.inputs import parse_selector
from tests.helpers import chaos as h
from tests.helpers.cluster import CRASH, DC, create_group, dc_body, journal_reaches, make_group, view
from tests.helpers.proxy import FaultPlan, Record

LEASE = 6  # A's --lease-duration (seconds): short, so that a frozen A loses it soon
A_IMAGE = "registry.local/shop/api:v2-slow30"  # A is still watching when it wakes
B_IMAGE = "registry.local/shop/api:v3-slow6"  # B still watches when A wakes, then completes


def run_a(kubeconfig, namespace: str, report, *images: str) -> h.subprocess.Popen[str]:
    return h.start(
        kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        h.SELECTOR,
        *images,
        "--lease-duration",
        f"{LEASE}s",
        report=report,
    )


def wait_lease_expired(client, namespace: str, name: str = h.JOURNAL) -> None:
    """A lease expires by the clock alone: no event to wait on, so sleep until then."""
    lease = client.get(LEASES, name, namespace=namespace)
    time.sleep(max(read_lease(lease).expires_in, 0) + 0.5)
    assert not read_lease(client.get(LEASES, name, namespace=namespace)).live


def refused_renewal(record: Record) -> bool:
    """A's renew of its own group Lease refused by the resourceVersion precondition (409): how a run
    learns it lost the group. It changes nothing on the server, so it is not counted as a write."""
    return record.resource == "leases" and record.path.endswith(f"/{h.JOURNAL}") and record.status == 409


def reached_server(records: list[Record]) -> list[str]:
    """Mutating requests that reached the API server (answered by it, or dropped after forwarding),
    refused renewals of the run's own Lease aside."""
    return [
        f"{r.method} {r.path} -> {r.status}"
        for r in records
        if r.mutating and r.fault in ("", "drop_after") and not refused_renewal(r)
    ]


def b_takes_over(client, sandbox, namespace: str, tmp_path) -> tuple[h.subprocess.Popen[str], str]:
    """Run B, straight to the API server, once A's lease expired; returns B and its run id once watching."""
    wait_lease_expired(client, namespace)
    b = h.start_rollout(sandbox.kubeconfig, namespace, B_IMAGE, report=tmp_path / "b.json")
    seen = h.wait_until(
        client,
        CONFIG_MAPS,
        namespace,
        h.JOURNAL,
        lambda o: (
            (j := json.loads(o["data"][DATA_KEY]))["run"]["state"] == "watching"
            and j["run"]["id"] != ""
            and B_IMAGE in json.dumps(j["workloads"])
        ),
        timeout=60,
        what="run B watching",
    )
    return b, json.loads(seen["data"][DATA_KEY])["run"]["id"]


def assert_superseded(result: h.Result, holder: str) -> None:
    assert result.code == 3, result.stdout[-2500:] + result.stderr[-1000:]
    assert result.report["status"] == "superseded", result.report
    assert "lost the group" in result.report["error"], result.report["error"]
    if holder:
        assert f"run {holder}" in result.report["error"], result.report["error"]
    assert "Traceback" not in result.stderr, result.stderr


def wake_and_count(proxy, a, a_report, holder: str) -> tuple[h.Result, list[str], int]:
    """SIGCONT A, wait for its end; its mutating requests after the loss and its refused renewals."""
    mark = len(proxy.records)
    a.send_signal(signal.SIGCONT)
    result = h.finish(a, a_report, timeout=120)
    after = proxy.records[mark:]
    return result, reached_server(after), sum(map(refused_renewal, after))


def test_frozen_past_its_lease_during_the_watch(client, sandbox, proxy, tmp_path, namespace, ledger_entry):
    """A is frozen while it watches; B takes the group over and rolls it out; A wakes during B's watch."""
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    a_report = tmp_path / "a.json"
    a = run_a(kubeconfig, namespace, a_report, *h.image_args(A_IMAGE))
    journal_reaches(client, namespace, "watching")
    a.send_signal(signal.SIGSTOP)
    try:
        b, holder = b_takes_over(client, sandbox, namespace, tmp_path)
        result, after, renewals = wake_and_count(proxy, a, a_report, holder)
    finally:
        a.send_signal(signal.SIGCONT)
    assert_superseded(result, holder)
    assert after == [], after
    done = h.finish(b, tmp_path / "b.json", timeout=120)
    assert done.code == 0, done.stdout[-2000:] + done.stderr
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (B_IMAGE,))
    ledger_entry.case(
        "frozen past its lease while watching",
        faults={"SIGSTOP": 1, "concurrent run": 1},
        states=verdict.checks + 3,
        detail=f"A exit 3 superseded naming run {holder}; 0 writes after the loss "
        f"({renewals} renewal refused 409); B exit 0 stands",
    )


def test_frozen_past_its_lease_during_its_revert(client, sandbox, proxy, tmp_path, namespace, ledger_entry):
    """A's dc2 crash-loops, A reverts; it is frozen right after its first revert write was answered."""
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    a_report = tmp_path / "a.json"
    a = run_a(kubeconfig, namespace, a_report, *h.image_args(A_IMAGE, crash_second=CRASH))
    puts: dict[str, int] = {}

    def second_write_of_a_workload(record: Record) -> bool:  # the first is the rollout's, the next its revert
        if record.method != "PUT" or not re.search(r"/(deploymentconfigs|deployments)/[^/]+$", record.path):
            return False
        if record.query.get("dryRun"):  # preflight's server-side dry run stores nothing
            return False
        puts[record.path] = puts.get(record.path, 0) + 1
        return puts[record.path] == 2

    frozen = []
    proxy.after_mutation_matching(
        second_write_of_a_workload, lambda r: (a.send_signal(signal.SIGSTOP), frozen.append(r.path))
    )
    try:
        h.wait_until(
            client,
            CONFIG_MAPS,
            namespace,
            h.JOURNAL,
            lambda o: json.loads(o["data"][DATA_KEY])["run"]["state"] == "reverting" and bool(frozen),
            timeout=90,
            what="A reverting, then frozen",
        )
        b, holder = b_takes_over(client, sandbox, namespace, tmp_path)
        result, after, renewals = wake_and_count(proxy, a, a_report, holder)
    finally:
        a.send_signal(signal.SIGCONT)
    assert not proxy.hook_errors, proxy.hook_errors
    assert_superseded(result, holder)
    # The group's revert writes go out at once: one already past its check when SIGSTOP froze the
    # process is sent on waking, and its resourceVersion precondition (the server-side fence) refuses
    # it. Nothing may land: every request after the loss is such a refused workload write, at most one
    # per workload.
    landed = [w for w in after if not (w.endswith("-> 409") and w.startswith("PUT "))]
    assert landed == [] and len(after) <= 3, after
    done = h.finish(b, tmp_path / "b.json", timeout=120)
    assert done.code == 0, done.stdout[-2000:] + done.stderr
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (B_IMAGE,))
    ledger_entry.case(
        "frozen past its lease while reverting",
        faults={"SIGSTOP": 1, "concurrent run": 1},
        states=verdict.checks + 3,
        detail=f"frozen after {frozen[0].rsplit('/', 1)[-1]}'s revert write; A exit 3 superseded "
        f"naming run {holder}; 0 writes after the loss ({renewals} renewal refused 409); "
        "B exit 0 stands",
    )


def test_renewer_cut_off_by_the_proxy(client, sandbox, proxy, tmp_path, namespace, ledger_entry):
    """Every lease renewal of A's is dropped before it reaches the server (a partition of the renewer).

    A must stop before its lease can expire for anyone else, write nothing from then on, and exit 3;
    B then takes the group over once the lease expired and its result stands.
    """
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    make_group(client, namespace)
    a_report = tmp_path / "a.json"
    a = run_a(kubeconfig, namespace, a_report, *h.image_args(A_IMAGE))
    journal_reaches(client, namespace, "watching")
    proxy.plan = FaultPlan(
        rates={"drop_before": 1.0},
        verbs=frozenset({"update"}),
        resources=frozenset({"leases"}),
        max_faults=10_000,
    )
    result = h.finish(a, a_report, timeout=60)
    assert_superseded(result, "")
    assert "not renewed" in result.report["error"], result.report["error"]
    good = [
        r for r in proxy.records if r.resource == "leases" and r.mutating and not r.fault and r.status < 300
    ]
    proof_ends = good[-1].at + LEASE - fence_margin(LEASE)  # the last good renew proves nothing after this
    late = reached_server([r for r in proxy.records if r.at >= proof_ends])
    assert late == [], late
    dropped = sum(1 for r in proxy.records if r.fault == "drop_before")
    assert dropped >= 2, dropped  # it did retry
    proxy.plan = FaultPlan()
    wait_lease_expired(client, namespace)
    b = h.rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", h.SELECTOR, *h.image_args(B_IMAGE))
    assert b.code == 0, b.stdout[-2000:] + b.stderr
    verdict = h.assert_consistent(client, sandbox.kubeconfig, namespace, (B_IMAGE,))
    ledger_entry.case(
        "renewer cut off",
        faults={"drop_before": dropped},
        states=verdict.checks + 3,
        detail=f"{dropped} renewals dropped; A exit 3 superseded before its lease expired; "
        "0 mutating requests after; B exit 0 stands",
    )


# -- one owner per workload -----------------------------------------------------------------------------

SHOP, BACKEND = "app=shop", "tier=backend"
X_IMAGE = "registry.local/shop/api:v2-slow8"
Y_IMAGE = "registry.local/shop/api:v3-slow8"


def overlapping_groups(client, namespace: str) -> None:
    """dc/a in both groups, dc/b only in app=shop, dc/c only in tier=backend."""
    create_group(
        client,
        namespace,
        [
            dc_body("a", h.OLD, labels={"app": "shop", "tier": "backend"}),
            dc_body("b", h.OLD, labels={"app": "shop"}),
            dc_body("c", h.OLD, labels={"tier": "backend"}),
        ],
    )


def images(client, namespace: str) -> dict[str, str]:
    return {n: view(client, namespace, DC, n).images["app"] for n in ("a", "b", "c")}


def claims_left(client, namespace: str) -> list[str]:
    """The workloads the namespace's claim register lists (live or not); [] when there is no register."""
    try:
        register = client.get(LEASES, REGISTER, namespace=namespace)
    except NotFound:
        return []
    return sorted(claims_of(register))


def test_overlapping_groups_at_once_one_is_refused(client, sandbox, tmp_path, namespace, ledger_entry):
    overlapping_groups(client, namespace)
    kubeconfig = sandbox.kubeconfig
    x = h.start(
        kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SHOP,
        "--image",
        f"dc/a={X_IMAGE}",
        "--image",
        f"dc/b={X_IMAGE}",
        report=tmp_path / "x.json",
    )
    y = h.start(
        kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        BACKEND,
        "--image",
        f"dc/a={Y_IMAGE}",
        "--image",
        f"dc/c={Y_IMAGE}",
        report=tmp_path / "y.json",
    )
    rx, ry = h.finish(x, tmp_path / "x.json"), h.finish(y, tmp_path / "y.json")
    codes = sorted([rx.code, ry.code])
    assert codes == [0, 2], (rx.code, rx.stderr[-800:], ry.code, ry.stderr[-800:])
    winner, loser = (rx, ry) if rx.code == 0 else (ry, rx)
    won_image, lost_only = (X_IMAGE, "c") if winner is rx else (Y_IMAGE, "b")
    line = loser.stderr.strip().splitlines()[-1]
    assert "dc/a is claimed by" in line and f"run {winner.report['run_id']}" in line, line
    assert loser.report["status"] == "refused"
    live = images(client, namespace)
    assert live["a"] == won_image and live[lost_only] == h.OLD, live
    assert claims_left(client, namespace) == []
    for selector in (SHOP, BACKEND):  # no live lock left, nothing paused, every workload complete
        lease = group_name(parse_selector(selector))
        leases = [o["metadata"]["name"] for o in client.list(LEASES, namespace=namespace)["items"]]
        assert lease not in leases, leases
    for name in ("a", "b", "c"):
        state = view(client, namespace, DC, name)
        assert state.complete and not state.paused, state

    # Now the loser's group runs alone: it takes dc/a over, and both groups have a journal.
    again = h.rollguard(
        kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        BACKEND if winner is rx else SHOP,
        "--image",
        f"dc/a={h.NEWER}",
        "--image",
        f"dc/{lost_only}={h.NEWER}",
    )
    assert again.code == 0, again.stdout[-1500:] + again.stderr
    status = h.rollguard(kubeconfig, "status", "-n", namespace)
    assert status.code == 0, status.stdout + status.stderr
    overlap = [ln for ln in status.stdout.splitlines() if "overlapping: in 2 rollout groups" in ln]
    assert overlap and "'app=shop'" in overlap[0] and "'tier=backend'" in overlap[0], status.stdout
    drift = h.rollguard(kubeconfig, "drift-check", "-n", namespace, "--report", str(tmp_path / "d.json"))
    report = json.loads((tmp_path / "d.json").read_text())
    text = json.dumps(report)
    assert drift.code == 0 and "in 2 rollout groups" in text and "tier=backend" in text, (
        drift.code,
        text[:1500],
    )
    flagged = h.rollguard(kubeconfig, "drift-check", "-n", namespace, "--fail-on", "overlapping")
    assert flagged.code == 1 and re.search(r"dc +a +overlapping", flagged.stdout), (
        flagged.stdout + flagged.stderr
    )
    ledger_entry.case(
        "overlapping groups at once",
        faults={"concurrent run": 1},
        states=12,
        detail=f"one exit 0, the other exit 2 naming run {winner.report['run_id']}; dc/a named "
        "overlapping by status and drift-check",
    )


def test_holders_claims_are_taken_over_once_its_lease_expired(
    client, sandbox, proxy, tmp_path, namespace, ledger_entry
):
    """X is killed right after claiming its workloads; Y, of the other group, is refused while X's lease
    is live and proceeds once it expired."""
    overlapping_groups(client, namespace)
    kubeconfig = proxy.kubeconfig(sandbox.kubeconfig, tmp_path / "kubeconfig")
    x = h.start(
        kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SHOP,
        "--image",
        f"dc/a={X_IMAGE}",
        "--image",
        f"dc/b={X_IMAGE}",
        "--lease-duration",
        f"{LEASE}s",
    )
    claims_seen: list[str] = []

    def last_claim(record: Record) -> bool:
        if record.method == "POST" and record.resource == "leases" and record.status == 201:
            claims_seen.append(record.path)
        return len(claims_seen) == 2  # the group Lease, then the claim register (dc/a and dc/b)

    proxy.after_mutation_matching(last_claim, h.killer(x))
    assert h.finish(x).code == -signal.SIGKILL
    proxy.wait_writes_landed()
    held = claims_left(client, namespace)
    assert held == ["dc/a", "dc/b"], held
    early = h.rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        BACKEND,
        "--image",
        f"dc/a={Y_IMAGE}",
        "--image",
        f"dc/c={Y_IMAGE}",
    )
    assert early.code == 2 and "dc/a is claimed by" in early.stderr, early.stdout + early.stderr
    wait_lease_expired(client, namespace, group_name(SHOP))
    late = h.rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        BACKEND,
        "--image",
        f"dc/a={Y_IMAGE}",
        "--image",
        f"dc/c={Y_IMAGE}",
    )
    assert late.code == 0, late.stdout[-1500:] + late.stderr
    live = images(client, namespace)
    assert live == {"a": Y_IMAGE, "b": h.OLD, "c": Y_IMAGE}, live
    assert claims_left(client, namespace) == []  # X's claims dropped with its dead lease, Y's released
    ledger_entry.case(
        "dead holder's claims taken over",
        faults={"SIGKILL": 1, "concurrent run": 1},
        states=6,
        detail="refused while the killed run's lease was live; exit 0 once it expired",
    )


@pytest.mark.parametrize("spelling", ["app in (rp)", " app = rp ", "app in ( rp ),app==rp"])
def test_two_spellings_of_one_selector_share_lock_and_journal(
    client, sandbox, tmp_path, namespace, ledger_entry, spelling
):
    create_group(client, namespace, [dc_body(n, h.OLD, labels={"app": "rp"}) for n in ("p", "q")])
    first = h.start(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        "app=rp",
        "--image",
        f"dc/p={X_IMAGE}",
        "--image",
        f"dc/q={X_IMAGE}",
    )
    h.wait_until(
        client,
        CONFIG_MAPS,
        namespace,
        group_name("app=rp"),
        lambda o: json.loads(o["data"][DATA_KEY])["run"]["state"] == "watching",
        timeout=60,
        what="the first run watching",
    )
    second = h.rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        spelling,
        "--image",
        f"dc/p={h.NEWER}",
        "--image",
        f"dc/q={h.NEWER}",
    )
    assert second.code == 2 and "locked by" in second.stderr, second.stdout + second.stderr
    assert h.finish(first).code == 0
    third = h.rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        spelling,
        "--image",
        f"dc/p={h.NEWER}",
        "--image",
        f"dc/q={h.NEWER}",
    )
    assert third.code == 0, third.stdout[-1500:] + third.stderr
    journals = client.list(CONFIG_MAPS, namespace=namespace, selector=f"{JOURNAL_LABEL}=true")["items"]
    assert [j["metadata"]["name"] for j in journals] == [group_name("app=rp")]
    record = json.loads(journals[0]["data"][DATA_KEY])
    third_id = re.search(r"run (\d{8}-\d{6}-[0-9a-f]{6})", third.stdout).group(1)
    assert record["run"]["id"] == third_id and record["run"]["state"] == "succeeded", record["run"]
    assert journals[0]["metadata"]["annotations"]["rollguard.io/selector"] == "app=rp"
    ledger_entry.case(
        f"selector spelled {spelling!r}",
        faults={"concurrent run": 1},
        states=4,
        detail="refused by the same lock while the first ran; then one journal, two runs",
    )
