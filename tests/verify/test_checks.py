"""Post-rollout checks (``--verify FILE``, issue 25) on the live sandbox: http and job checks passing and
failing (a failure reverts the whole group: all-old, verified), a run killed while verifying finished by
the next run, SIGTERM while verifying, ``--dry-run`` and bad check input refused with nothing changed.

The http checks ask a server the test starts on 127.0.0.1 (tests/helpers/servers.py): the sandbox's pods
are not real processes, so the test's server stands in for the release's Service. The job checks run on
the sandbox's real Job controller (kube-controller-manager) and the stand-in kubelet, whose `-exit<N>`
images are batch processes exiting with code N (sandbox/podstatus.py, after the kubelet's getPhase).
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from rollguard.cluster.lock import read_lease
from rollguard.core.resources import EVENTS, JOBS, LEASES, PODS
from rollguard.plan.checks import RUN_LABEL
from tests.helpers.cluster import (
    CRASH,
    JOURNAL,
    NEW,
    NEWER,
    OLD,
    SELECTOR,
    all_on,
    image_args,
    journal,
    journal_reaches,
    make_group,
    resource_versions,
    rollguard,
    start_rollguard,
    wait_until,
)
from tests.helpers.servers import http_server

SMOKE = "registry.local/shop/smoke"  # the test image of the job checks


def job_manifest(image: str, *, backoff: int = 0, policy: str = "Never") -> str:
    return f"""apiVersion: batch/v1
kind: Job
metadata: {{name: smoke}}
spec:
  backoffLimit: {backoff}
  template:
    spec:
      restartPolicy: {policy}
      containers: [{{name: smoke, image: "{image}"}}]
"""


def checks_file(tmp_path: Path, body: str, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    path = tmp_path / "checks.yaml"
    path.write_text(body)
    return path


IMAGES = image_args(NEW)


def test_http_check_passes_and_the_report_says_so(sandbox, namespace, client, tmp_path: Path):
    make_group(client, namespace)
    with http_server(lambda path: (200, b'{"status": "healthy"}')) as url:
        checks = checks_file(
            tmp_path,
            f"""checks:
  - name: health
    timeout: 60s
    http: {{url: "{url}/health", status: [200], body: healthy, successes: 3}}
""",
        )
        more = tmp_path / "more"
        more.mkdir()
        second = checks_file(
            more, f"checks:\n  - {{name: ready, http: {{url: '{url}/ready'}}}}\n"
        )  # --verify repeats
        result = rollguard(
            sandbox.kubeconfig,
            "rollout",
            "-n",
            namespace,
            "-l",
            SELECTOR,
            *IMAGES,
            "--verify",
            str(checks),
            "--verify",
            str(second),
            report=tmp_path / "r.json",
        )
    assert result.code == 0, result.stdout + result.stderr
    all_on(client, namespace, NEW)
    assert f"verify: http {url}/health 3/3 ok" in result.stdout
    check, ready = result.report["checks"]
    assert check["name"] == "health" and check["kind"] == "http" and check["outcome"] == "passed"
    assert check["evidence"].startswith("3/3 consecutive: 200 OK") and check["duration"] >= 0
    assert (ready["name"], ready["outcome"]) == ("ready", "passed")
    assert result.report["status"] == "succeeded" and "checks: 2 passed" in result.stdout
    record = journal(client, namespace)
    assert record is not None and record["run"]["state"] == "succeeded"
    assert record["workloads"]["dc/dc1"]["verified"]["images"] == {"app": NEW}


def test_a_failing_http_check_reverts_the_whole_group(sandbox, namespace, client, tmp_path: Path):
    """The release rolls out ready, but answers 500: the run fails on the check and reverts every member."""
    make_group(client, namespace)
    with http_server(lambda path: (500, b"upstream connect error")) as url:
        checks = checks_file(
            tmp_path,
            f"""checks:
  - name: health
    timeout: 4s
    http: {{url: "{url}/health", successes: 2}}
""",
        )
        result = rollguard(
            sandbox.kubeconfig,
            "rollout",
            "-n",
            namespace,
            "-l",
            SELECTOR,
            *IMAGES,
            "--verify",
            str(checks),
            "--results-dir",
            str(tmp_path / "results"),
            report=tmp_path / "r.json",
        )
    assert result.code == 1, result.stdout + result.stderr
    all_on(client, namespace, OLD)
    report = result.report
    assert report["status"] == "reverted"
    # Tekton results: status stays one word, the summary names the failed check
    assert (tmp_path / "results" / "status").read_text() == "reverted"
    summary = (tmp_path / "results" / "summary").read_text()
    assert "\n" not in summary and summary.startswith(
        "reverted: 3 reverted; checks: 1 failed; cause: check 'health'"
    )
    assert report["error"].startswith("check 'health' (http) failed: timed out after 4s")
    assert "500 Internal Server Error" in report["error"] and "upstream connect error" in report["error"]
    assert {w["outcome"] for w in report["workloads"]} == {"reverted"}
    assert [(c["name"], c["outcome"]) for c in report["checks"]] == [("health", "failed")]
    record = journal(client, namespace)
    assert record is not None and record["run"]["state"] == "reverted"
    assert record["workloads"]["dc/dc1"]["verified"]["images"] == {"app": OLD}
    reverted = [
        e for e in client.list(EVENTS, namespace=namespace)["items"] if e["reason"] == "RollguardReverted"
    ]
    assert len(reverted) == 3 and all("cause: check 'health'" in e["message"] for e in reverted)
    status = rollguard(sandbox.kubeconfig, "status", "-n", namespace)
    assert "  last run failed a check: check 'health' (http) failed: timed out after 4s" in status.stdout, (
        status.stdout
    )


def test_job_check_passes_on_the_job_controller_and_is_deleted(sandbox, namespace, client, tmp_path: Path):
    make_group(client, namespace)
    checks = checks_file(
        tmp_path,
        "checks:\n  - {name: smoke, timeout: 2m, job: smoke-job.yaml}\n",
        **{"smoke-job.yaml": job_manifest(f"{SMOKE}:v1-exit0")},
    )
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        *IMAGES,
        "--verify",
        str(checks),
        report=tmp_path / "r.json",
    )
    assert result.code == 0, result.stdout + result.stderr
    all_on(client, namespace, NEW)
    [check] = result.report["checks"]
    assert check["outcome"] == "passed" and "Complete (1 succeeded, 0 failed)" in check["evidence"]
    assert "PASS: 12 of 12 tests passed" in check["evidence"]  # its pod's log tail
    run_id = result.report["run_id"]
    assert f"job smoke-{run_id}" in check["evidence"]
    # Deleted afterwards, its pods with it (propagation Background).
    assert client.list(JOBS, namespace=namespace, selector=f"{RUN_LABEL}={run_id}")["items"] == []
    leftover = client.list(PODS, namespace=namespace, selector=f"job-name=smoke-{run_id}")["items"]
    assert all(p["metadata"].get("deletionTimestamp") for p in leftover), leftover


def test_a_failing_job_honours_backoff_limit_reverts_and_is_kept(sandbox, namespace, client, tmp_path: Path):
    """backoffLimit 1: the Job controller runs a second pod after the first fails, then fails the Job;
    ``keep: true`` leaves it for debugging, labelled with the run id."""
    make_group(client, namespace)
    checks = checks_file(
        tmp_path,
        "checks:\n  - {name: smoke, timeout: 2m, job: smoke-job.yaml, keep: true}\n",
        **{"smoke-job.yaml": job_manifest(f"{SMOKE}:v1-exit3", backoff=1)},
    )
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        *IMAGES,
        "--verify",
        str(checks),
        report=tmp_path / "r.json",
    )
    assert result.code == 1, result.stdout + result.stderr
    all_on(client, namespace, OLD)
    report = result.report
    assert report["error"].startswith("check 'smoke' (job) failed: job smoke-")
    assert "BackoffLimitExceeded" in report["error"] and "(0 succeeded, 2 failed)" in report["error"]
    assert "FAIL: 3 of 12 tests failed (exit 3)" in report["error"]  # the test's own last words
    [check] = report["checks"]
    assert check["evidence"].count("Failed, exit 3 Error") == 2
    [job] = client.list(JOBS, namespace=namespace, selector=f"{RUN_LABEL}={report['run_id']}")["items"]
    assert job["metadata"]["name"] == f"smoke-{report['run_id']}" and job["status"]["failed"] == 2


def test_dry_run_validates_the_checks_and_runs_none(sandbox, namespace, client, tmp_path: Path):
    make_group(client, namespace)
    before = resource_versions(client, namespace)
    checks = checks_file(
        tmp_path,
        """checks:
  - {name: smoke, job: smoke-job.yaml}
  - {name: health, http: {url: "http://127.0.0.1:9/never-asked"}}
""",
        **{"smoke-job.yaml": job_manifest(f"{SMOKE}:v1-exit0")},
    )
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        *IMAGES,
        "--dry-run",
        "--verify",
        str(checks),
        "--bake",
        "30s",
        report=tmp_path / "r.json",
    )
    assert result.code == 0, result.stdout + result.stderr
    assert [(c["name"], c["outcome"]) for c in result.report["checks"]] == [
        ("smoke", "validated"),
        ("health", "validated"),
        ("bake", "validated"),
    ]
    assert resource_versions(client, namespace) == before
    assert client.list(JOBS, namespace=namespace)["items"] == []


BAD = {
    "malformed YAML": ("checks: [{name: health, http: {url: 'http://x/'}", {}, "not valid YAML"),
    "a Job manifest of another kind": (
        "checks: [{name: smoke, job: smoke-job.yaml}]",
        {"smoke-job.yaml": "apiVersion: v1\nkind: Pod\nspec: {template: {}}\n"},
        "is a v1 Pod, not a batch/v1 Job",
    ),
    "a check name in two files": (
        "checks: [{name: health, http: {url: 'http://x/'}}]",
        {},
        "check name(s) health used in more than one file",
    ),
    "a URL without scheme": (
        "checks: [{name: health, http: {url: 'api.shop.svc:8080/health'}}]",
        {},
        "has no http:// or https:// scheme",
    ),
    "a Job the API server refuses": (  # restartPolicy Always: Job validation's own words, by dry run
        "checks: [{name: smoke, job: smoke-job.yaml}]",
        {"smoke-job.yaml": job_manifest(f"{SMOKE}:v1-exit0", policy="Always")},
        'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"',
    ),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_check_input_is_refused_with_nothing_changed(
    sandbox, namespace, client, tmp_path: Path, case: str
):
    make_group(client, namespace)
    before = resource_versions(client, namespace)
    text, files, words = BAD[case]
    checks = checks_file(tmp_path, text, **files)
    twice = ["--verify", str(checks)] if case == "a check name in two files" else []
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        *IMAGES,
        "--verify",
        str(checks),
        *twice,
        report=tmp_path / "r.json",
    )
    assert result.code == 2, result.stdout + result.stderr
    assert words in result.report["error"] and "--verify" in result.report["error"]
    assert result.report["status"] == "refused"
    assert resource_versions(client, namespace) == before
    assert client.list(JOBS, namespace=namespace)["items"] == []
    all_on(client, namespace, OLD)


def killed_while_verifying(sandbox, namespace, client, tmp_path: Path) -> dict:
    """A rollout of the group SIGKILLed while its 10-minute job check runs, and its lease run out by the
    clock (as a dead run's does); the journal record it left ('verifying')."""
    make_group(client, namespace)
    checks = checks_file(
        tmp_path,
        "checks:\n  - {name: smoke, timeout: 5m, job: smoke-job.yaml}\n",
        **{"smoke-job.yaml": job_manifest(f"{SMOKE}:v1-slow600")},
    )  # runs 10 minutes
    first = start_rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        *IMAGES,
        "--verify",
        str(checks),
        "--lease-duration",
        "5s",
    )
    record = journal_reaches(client, namespace, "verifying")
    # the journal says 'verifying' before the check's Job is made: kill the run once the Job is there
    wait_until(
        client, JOBS, namespace, f"smoke-{record['run']['id']}", lambda job: True, what="to be created"
    )
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    lease = read_lease(client.get(LEASES, JOURNAL, namespace=namespace))
    time.sleep(max(lease.expires_in, 0) + 0.5)  # a dead run's lease expires by the clock alone
    return record


def test_a_run_killed_while_verifying_is_finished_by_the_next_run(sandbox, namespace, client, tmp_path: Path):
    """SIGKILL while a job check runs: the journal says 'verifying' and still holds the old images as the
    verified state (the check never passed); the next run carries that forward, so when it fails too the
    group goes back to the old images, not to the killed run's unverified ones."""
    record = killed_while_verifying(sandbox, namespace, client, tmp_path)
    assert record["workloads"]["dc/dc1"]["verified"]["images"] == {"app": OLD}
    all_on(client, namespace, NEW)  # rolled out, never verified
    # Nobody is left to delete the dead run's Job: the check's timeout is its deadline, so it ends anyway.
    [dead] = client.list(JOBS, namespace=namespace, selector=f"{RUN_LABEL}={record['run']['id']}")["items"]
    assert dead["spec"]["activeDeadlineSeconds"] == 300

    with http_server(lambda path: (503, b"no")) as url:
        failing = checks_file(
            tmp_path, f"checks:\n  - {{name: health, timeout: 2s, http: {{url: '{url}/'}}}}\n"
        )
        second = rollguard(
            sandbox.kubeconfig,
            "rollout",
            "-n",
            namespace,
            "-l",
            SELECTOR,
            *image_args(NEWER),
            "--verify",
            str(failing),
            report=tmp_path / "second.json",
        )
    assert second.code == 1, second.stdout + second.stderr
    assert "ended in state 'verifying'; its last verified state is carried forward" in second.stdout
    all_on(client, namespace, OLD)
    final = journal_reaches(client, namespace, "reverted")
    assert final["workloads"]["deployment/web"]["verified"]["images"] == {"app": OLD}


def test_sigterm_while_verifying_reverts(sandbox, namespace, client, tmp_path: Path):
    make_group(client, namespace)
    checks = checks_file(
        tmp_path,
        "checks:\n  - {name: smoke, timeout: 5m, job: smoke-job.yaml}\n",
        **{"smoke-job.yaml": job_manifest(f"{SMOKE}:v1-slow600")},
    )  # runs 10 minutes
    run = start_rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        *IMAGES,
        "--verify",
        str(checks),
        "--report",
        str(tmp_path / "r.json"),
    )
    journal_reaches(client, namespace, "verifying")
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=90)
    assert run.returncode == 1, out + err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["status"] == "reverted" and "SIGTERM" in report["error"]
    assert [(c["name"], c["outcome"]) for c in report["checks"]] == [("smoke", "stopped")]
    all_on(client, namespace, OLD)
    assert client.list(JOBS, namespace=namespace)["items"] == []  # the stopped check's Job is deleted


def test_https_with_a_given_ca_follows_redirects_and_the_system_store_refuses_it(
    sandbox, namespace, client, tmp_path: Path
):
    """TLS: the check trusts the CA it is given (here the sandbox's, which signed the server's
    certificate for 127.0.0.1); the system's store does not know that CA, so the same URL fails there,
    the certificate error said, and the group is reverted. The redirect followed is in the evidence."""
    make_group(client, namespace)
    pki = sandbox.dir / "pki"

    def answer(path: str) -> tuple[int, bytes]:
        return (302, b"/health") if path == "/old-health" else (200, b"UP")

    with http_server(answer, tls=(pki / "kubelet.crt", pki / "kubelet.key")) as url:
        trusted = checks_file(
            tmp_path,
            f"""checks:
  - name: health
    timeout: 30s
    http: {{url: "{url}/old-health", body: UP, successes: 2, ca: "{pki / "ca.crt"}"}}
""",
        )
        ok = rollguard(
            sandbox.kubeconfig,
            "rollout",
            "-n",
            namespace,
            "-l",
            SELECTOR,
            *IMAGES,
            "--verify",
            str(trusted),
            report=tmp_path / "ok.json",
        )
        assert ok.code == 0, ok.stdout + ok.stderr
        evidence = ok.report["checks"][0]["evidence"]
        assert evidence.startswith("2/2 consecutive: 200 OK (redirected: 302 -> ") and "/health" in evidence
        system = checks_file(
            tmp_path, f"checks:\n  - {{name: health, timeout: 3s, http: {{url: '{url}/health'}}}}\n"
        )
        refused = rollguard(
            sandbox.kubeconfig,
            "rollout",
            "-n",
            namespace,
            "-l",
            SELECTOR,
            *image_args(NEWER),
            "--verify",
            str(system),
            report=tmp_path / "refused.json",
        )
    assert refused.code == 1, refused.stdout + refused.stderr
    assert "CERTIFICATE_VERIFY_FAILED" in refused.report["error"], refused.report["error"]
    all_on(client, namespace, NEW)


def test_a_failed_rollout_runs_no_check(sandbox, namespace, client, tmp_path: Path):
    """Checks verify a group that rolled out; a rollout that fails first is reverted without them."""
    make_group(client, namespace)
    asked: list[str] = []

    def answer(path: str) -> tuple[int, bytes]:
        asked.append(path)
        return 200, b"ok"

    with http_server(answer) as url:
        checks = checks_file(tmp_path, f"checks:\n  - {{name: health, http: {{url: '{url}/health'}}}}\n")
        result = rollguard(
            sandbox.kubeconfig,
            "rollout",
            "-n",
            namespace,
            "-l",
            SELECTOR,
            "--image",
            f"dc/dc1={NEW}",
            "--image",
            f"dc/dc2={CRASH}",
            "--image",
            f"deploy/web={NEW}",
            "--verify",
            str(checks),
            report=tmp_path / "r.json",
        )
    assert result.code == 1, result.stdout + result.stderr
    assert "dc/dc2" in result.report["error"] and "CrashLoopBackOff" in result.report["error"]
    assert [(c["name"], c["outcome"]) for c in result.report["checks"]] == [("health", "not-run")]
    assert asked == []
    all_on(client, namespace, OLD)


def test_a_run_killed_while_verifying_is_finished_by_a_revert(sandbox, namespace, client, tmp_path: Path):
    """The repair's way: `rollguard revert -l` takes the group back to what the journal verified, the old
    images (the killed run's checks never passed)."""
    killed_while_verifying(sandbox, namespace, client, tmp_path)
    status = rollguard(sandbox.kubeconfig, "status", "-n", namespace)
    assert "verifying" in status.stdout and "half-rolled" in status.stdout, status.stdout
    repaired = rollguard(
        sandbox.kubeconfig, "revert", "-n", namespace, "-l", SELECTOR, report=tmp_path / "rev.json"
    )
    assert repaired.code == 0, repaired.stdout + repaired.stderr
    all_on(client, namespace, OLD)
    record = journal(client, namespace)
    assert record is not None and record["run"]["state"] in ("repaired", "reverted"), record["run"]
