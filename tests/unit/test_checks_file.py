"""The ``--verify`` file's parser (`rollguard.plan.checks`), pure: the YAML case table in
tests/cases/checks/cases.yaml (the file's text and Job manifests in, checks or a refusal out),
plus the Job body a run creates and the prometheus/bake judgements."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rollguard.core.errors import RefusedError
from rollguard.plan.checks import CHECK_LABEL, RUN_LABEL, Check, job_body, job_name, parse_checks

CASES = yaml.safe_load((Path(__file__).parents[1] / "cases" / "checks" / "cases.yaml").read_text())


def flat(check: Check) -> dict[str, Any]:
    """A check as the case table spells it: its own fields and its kind's, side by side."""
    spec: Any = check.http or check.job or check.prometheus
    fields = {k: v for k, v in vars(spec).items() if k != "manifest"}
    fields["status"] = list(fields["status"]) if "status" in fields else None
    return {"name": check.name, "kind": str(check.kind), "timeout": check.timeout, **fields}


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_checks_file(case: dict[str, Any]) -> None:
    files: dict[str, str] = case.get("files") or {}

    def read(name: str) -> str:
        if name not in files:
            raise FileNotFoundError(2, "No such file or directory")
        return files[name]

    if "refused" in case:
        with pytest.raises(RefusedError) as caught:
            parse_checks(case["text"], source="checks.yaml", read=read)
        message = str(caught.value)
        assert message.startswith("--verify checks.yaml"), message
        for words in case["refused"]:
            assert words in message, message
        return
    checks = parse_checks(case["text"], source="checks.yaml", read=read)
    assert len(checks) == len(case["expect"])
    for check, want in zip(checks, case["expect"], strict=True):
        got = flat(check)
        assert {k: got.get(k) for k in want} == want


def test_the_job_is_the_runs_own() -> None:
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "smoke", "generateName": "x-", "namespace": "elsewhere", "labels": {"team": "a"},
                     "resourceVersion": "7", "uid": "u"},
        "spec": {"template": {"spec": {"containers": [{"name": "t", "image": "i"}]}}},
        "status": {"succeeded": 1},
    }  # fmt: skip
    name = job_name("smoke", "20261203-052000-ab12cd")
    assert name == "smoke-20261203-052000-ab12cd" and len(job_name("a" * 40, "20261203-052000-ab12cd")) <= 63
    body = job_body(
        manifest, name=name, namespace="shop", run_id="20261203-052000-ab12cd", check="smoke", timeout=300
    )
    assert body["metadata"] == {
        "name": name,
        "namespace": "shop",
        "labels": {"team": "a", RUN_LABEL: "20261203-052000-ab12cd", CHECK_LABEL: "smoke"},
    }
    assert "status" not in body
    assert body["spec"]["template"]["metadata"]["labels"][RUN_LABEL] == "20261203-052000-ab12cd"
    assert manifest["metadata"]["name"] == "smoke"  # the parsed manifest is left as read
    assert body["spec"]["activeDeadlineSeconds"] == 300  # the check's timeout, when the manifest sets none
    manifest["spec"]["activeDeadlineSeconds"] = 60
    assert job_body(manifest, name=name, namespace="shop", run_id="r", check="smoke", timeout=300)["spec"][
        "activeDeadlineSeconds"] == 60  # fmt: skip


def test_status_reads_the_failed_check_back_from_the_journals_error() -> None:
    from rollguard.core.errors import CheckFailed, failed_check

    error = str(
        CheckFailed(
            "check 'error-ratio' (prometheus) failed: 2 failed evaluation(s) of 3", check="error-ratio"
        )
    )
    assert failed_check(error) == "error-ratio"
    assert failed_check("dc/dc2: pod dc2-2-x container app: CrashLoopBackOff") is None
    assert failed_check("") is None


def test_the_checks_count_into_the_steps_budget() -> None:
    """--step-timeout (the Task): the rollout, its revert, the longest check or bake window and the
    overhead must end before the step's SIGKILL; a budget the checks overflow is refused."""
    from rollguard.plan.inputs import STEP_OVERHEAD, check_step_budget

    step = 2 * 600 + 120 + STEP_OVERHEAD
    check_step_budget(timeout=600, step_timeout=step, verify=120)
    with pytest.raises(RefusedError) as caught:
        check_step_budget(timeout=600, step_timeout=step, verify=121)
    assert "for the checks (--verify, --bake)" in str(caught.value)


BAKE = yaml.safe_load((Path(__file__).parents[1] / "cases" / "checks" / "bake.yaml").read_text())


def merged(base: Any, change: Any) -> Any:
    if isinstance(base, dict) and isinstance(change, dict):
        return {**base, **{k: merged(base.get(k), v) for k, v in change.items()}}
    return change


@pytest.mark.parametrize("case", BAKE["cases"], ids=[c["case"] for c in BAKE["cases"]])
def test_bake_findings(case: dict[str, Any]) -> None:
    from rollguard.kinds import KINDS
    from rollguard.run.bake import Member, finding, start

    base = BAKE["base"]
    kind = KINDS["Deployment"]
    member = Member(key="deployment/web", kind=kind, name="web", images={"app": "registry.local/shop/api:v2"})
    start(member, base["deployment"], [base["replicaset"]], [base["pod"]])
    assert member.restarts == {"p-1": 0} and member.ready == {"p-1"}
    deployment = (
        merged(base["deployment"], case["deployment"]) if "deployment" in case else base["deployment"]
    )
    pod = merged(base["pod"], case.get("pod") or {})
    found = finding(member, deployment, [base["replicaset"]], [pod])
    if case["expect"] is None:
        assert found is None
    else:
        assert found is not None and found.startswith(case["expect"]), found


@pytest.mark.parametrize(
    ("data", "ok", "said"),
    [
        ({"resultType": "vector", "result": [{"metric": {}, "value": [1, "0.002"]}]}, True, "0.002 below 0.01"),
        ({"resultType": "vector", "result": [{"metric": {"code": "500"}, "value": [1, "0.2"]}]}, False,
         '{code="500"} 0.2 not below 0.01'),
        ({"resultType": "scalar", "result": [1, "0"]}, True, "0 below 0.01"),
        ({"resultType": "vector", "result": [{"metric": {}, "value": [1, "NaN"]}]}, False, "nan not below"),
        ({"resultType": "vector", "result": []}, False, "empty result"),
        ({"resultType": "matrix", "result": []}, False, "a matrix result, not a vector or scalar"),
    ],
)  # fmt: skip
def test_prometheus_evaluation(data: dict[str, Any], ok: bool, said: str) -> None:
    """One evaluation of `below: 0.01` (rollguard.run.checks.prometheus.judge): every sample must hold;
    NaN (0/0: no requests at all) never holds; an empty result fails unless `empty: pass`."""
    from rollguard.plan.checks import PrometheusCheck
    from rollguard.run.checks.prometheus import judge

    spec = PrometheusCheck(url="http://p:9090", query="x", op="below", threshold=0.01)
    assert judge(spec, data) == (ok, judge(spec, data)[1]) and said in judge(spec, data)[1]


def test_an_unreadable_ca_or_token_file_is_refused(tmp_path: Path) -> None:
    from rollguard.plan.checks_read import check_files, token_of

    token = tmp_path / "token"
    token.write_text("s3cr3t\n")
    text = (
        f"checks: [{{name: p, prometheus: {{url: 'https://p:9091', query: up, above: 0, token: '{token}'}}}}]"
    )
    [check] = parse_checks(text, source="c.yaml", read=lambda _: "")
    check_files([check])
    assert check.prometheus is not None and token_of(check.prometheus) == "s3cr3t"
    missing = parse_checks(
        text.replace(str(token), str(tmp_path / "nope")), source="c.yaml", read=lambda _: ""
    )
    with pytest.raises(RefusedError, match="check 'p': cannot read its token file"):
        check_files(missing)
    ca = parse_checks(f"checks: [{{name: h, http: {{url: 'https://h/', ca: '{tmp_path / 'ca.crt'}'}}}}]",
                      source="c.yaml", read=lambda _: "")  # fmt: skip
    with pytest.raises(RefusedError, match="check 'h': cannot read its ca file"):
        check_files(ca)
