"""``rollout -f``: whole workload manifests as the run's one guarded change per workload (issue 15).

On the live sandbox: a set of manifests changes env, labels, resources and images of DCs and a
Deployment and brings a new Deployment; when one crashes the whole group is back on its old template
(env gone) and the new one is deleted; with good images from stdin each workload rolls out exactly once
and its pods carry the new env. What the server rejects (an invalid quantity or env var name, in a
Deployment or a DC) and a manifest outside the selector are refused before any change. A DC fed by an
image trigger keeps its resolved image under a placeholder; a Deployment an HPA scales keeps its live
replicas.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

from rollguard.core.resources import DEPLOYMENT_CONFIGS, DEPLOYMENTS, HORIZONTAL_POD_AUTOSCALERS, PODS
from rollguard.core.structs import Obj
from rollguard.kinds import KINDS
from tests.helpers.cluster import (
    CRASH,
    DC,
    DEPLOYMENT,
    NEW,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    deployment_body,
    resource_versions,
    rolled_out,
    rollguard,
    view,
)
from tests.helpers.scenarios import image_stream, latest_dc

ENV = [{"name": "FEATURE", "value": "on"}]
LIMITS = {"limits": {"cpu": "200m", "memory": "64Mi"}}


def released(body: Obj, image: str) -> Obj:
    """A release's manifest of a workload: new image, env, resources and labels (as helm would render it)."""
    out = copy.deepcopy(body)
    out["metadata"]["labels"]["release"] = "r2"
    out["spec"]["template"]["metadata"]["labels"]["release"] = "r2"
    (container,) = out["spec"]["template"]["spec"]["containers"]
    container.update(image=image, env=ENV, resources=LIMITS)
    return out


def group() -> list[Obj]:
    return [dc_body("dc1", OLD), dc_body("dc2", OLD), deployment_body("web", OLD)]


def release(*, dc2_image: str) -> list[Obj]:
    dc1, dc2, web = group()
    return [released(dc1, NEW), released(dc2, dc2_image), released(web, NEW), deployment_body("extra", NEW)]


def as_yaml(docs: list[Obj]) -> str:
    return yaml.safe_dump_all(docs)


def pod_templates(client, namespace: str, name: str) -> list[Obj]:
    """The containers of the pods of workload ``name`` that are running (not terminating)."""
    pods = client.list(PODS, namespace=namespace)["items"]
    label_keys = ("deploymentconfig", "name")
    return [
        c
        for p in pods
        if any(p["metadata"].get("labels", {}).get(k) == name for k in label_keys)
        and not p["metadata"].get("deletionTimestamp")
        for c in p["spec"]["containers"]
    ]


def test_manifest_release_with_a_crash_reverts_every_template_and_removes_the_new_workload(
    sandbox, namespace, client, tmp_path: Path
):
    create_group(client, namespace, group())
    before = {
        n: client.get(KINDS[k].resource, n, namespace=namespace)
        for k, n in ((DC, "dc1"), (DC, "dc2"), (DEPLOYMENT, "web"))
    }
    manifests = tmp_path / "release"
    manifests.mkdir()
    docs = release(dc2_image=CRASH)
    (manifests / "dcs.yaml").write_text(as_yaml(docs[:2]))
    (manifests / "web.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs[2:]}))
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", str(manifests),
                       report=tmp_path / "r.json")  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    assert "dc/dc2" in result.report["error"]
    for kind, name in ((DC, "dc1"), (DC, "dc2"), (DEPLOYMENT, "web")):
        live = client.get(KINDS[kind].resource, name, namespace=namespace)
        assert live["spec"]["template"] == before[name]["spec"]["template"], name  # env, limits, labels gone
        assert live["metadata"]["labels"] == before[name]["metadata"]["labels"], name
        state = view(client, namespace, kind, name)
        assert state.complete and not state.paused, name
        containers = pod_templates(client, namespace, name)
        assert containers and all(c["image"] == OLD and not c.get("env") for c in containers), name
    assert not [
        d for d in client.list(DEPLOYMENTS, namespace=namespace)["items"] if d["metadata"]["name"] == "extra"
    ]


def test_manifest_release_from_stdin_rolls_each_workload_out_once(sandbox, namespace, client, tmp_path: Path):
    create_group(client, namespace, group())
    revisions = {
        n: view(client, namespace, k, n).revision for k, n in ((DC, "dc1"), (DC, "dc2"), (DEPLOYMENT, "web"))
    }
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", "-",
                       stdin=as_yaml(release(dc2_image=NEW)), report=tmp_path / "r.json")  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    for kind, name in ((DC, "dc1"), (DC, "dc2"), (DEPLOYMENT, "web")):
        state = view(client, namespace, kind, name)
        assert state.revision == revisions[name] + 1, name  # exactly one rollout
        assert state.images == {"app": NEW} and state.complete, name
        live = client.get(KINDS[kind].resource, name, namespace=namespace)
        assert live["metadata"]["labels"]["release"] == "r2"
        containers = pod_templates(client, namespace, name)
        assert containers and all(
            c["env"] == ENV and c["resources"]["limits"] == LIMITS["limits"] for c in containers
        ), name
    rolled_out(client, DEPLOYMENT, namespace, "extra")
    assert view(client, namespace, DEPLOYMENT, "extra").images == {"app": NEW}

    again = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", "-",
                      stdin=as_yaml(release(dc2_image=NEW)), report=tmp_path / "again.json")  # fmt: skip
    assert again.code == 0, again.stdout + again.stderr
    for kind, name in ((DC, "dc1"), (DC, "dc2"), (DEPLOYMENT, "web")):
        assert view(client, namespace, kind, name).revision == revisions[name] + 1, (
            name
        )  # unchanged: no rollout
    assert {w["outcome"] for w in again.report["workloads"]} == {"unchanged"}


def test_invalid_quantity_and_manifest_outside_selector_are_refused_unchanged(
    sandbox, namespace, client, tmp_path
):
    create_group(client, namespace, group())
    fingerprint = resource_versions(client, namespace)
    bad = released(group()[2], NEW)
    bad["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "lots"}}
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", "-",
                       stdin=as_yaml([released(group()[0], NEW), bad]), timeout=60)  # fmt: skip
    assert result.code == 2, result.stdout + result.stderr
    assert "deployment/web" in result.stderr and "dry run" in result.stderr, result.stderr
    assert "quantities must match the regular expression" in result.stderr, (
        result.stderr
    )  # the server's words
    outside = deployment_body("other", NEW)
    outside["metadata"]["labels"] = {"app": "someone-else"}
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", "-",
                       stdin=as_yaml([released(group()[2], NEW), outside]), timeout=60)  # fmt: skip
    assert result.code == 2, result.stdout + result.stderr
    assert "deployment/other" in result.stderr and "does not match the selector" in result.stderr, (
        result.stderr
    )
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "stringData": {"pw": "x"}}
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", "-",
                       stdin=as_yaml([released(group()[2], NEW), secret]), timeout=60)  # fmt: skip
    assert result.code == 2 and "Secret/db" in result.stderr, result.stdout + result.stderr
    assert resource_versions(client, namespace) == fingerprint


def test_dc_manifest_the_server_refuses_is_refused_at_the_dry_run_unchanged(
    sandbox, namespace, client, tmp_path
):
    """As above, for a DC: OpenShift checks a DC's pod template as Kubernetes checks a Deployment's
    (openshift-apiserver pkg/apps/apis/apps/validation/validation.go; sandbox/openshift/podtemplate.py), so
    a quantity that is none (400, not decodable) and an env var name Kubernetes refuses (422) stop the run
    at its preflight dry run, in the server's words, before any write."""
    create_group(client, namespace, group())
    fingerprint = resource_versions(client, namespace)
    cases = {
        "cpu": ({"resources": {"limits": {"cpu": "lots"}}},
                ['DeploymentConfig in version "v1" cannot be handled as a DeploymentConfig',
                 "quantities must match the regular expression"]),
        "env": ({"env": [{"name": "1FEATURE", "value": "on"}]},
                ['DeploymentConfig.apps.openshift.io "dc2" is invalid: spec.template.spec.containers[0].env[0].name: '
                 'Invalid value: "1FEATURE": a valid environment variable name']),
    }  # fmt: skip
    for case, (fields, words) in cases.items():
        bad = released(group()[1], NEW)
        bad["spec"]["template"]["spec"]["containers"][0].update(fields)
        result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", "-",
                           stdin=as_yaml([released(group()[0], NEW), bad, released(group()[2], NEW)]),
                           report=tmp_path / f"{case}.json", timeout=60)  # fmt: skip
        assert result.code == 2, (case, result.stdout + result.stderr)
        assert "dc/dc2" in result.stderr and "dry run" in result.stderr, (case, result.stderr)
        for w in words:  # the server's words
            assert w in result.stderr, (case, result.stderr)
        assert resource_versions(client, namespace) == fingerprint, case


def test_placeholder_image_under_a_trigger_keeps_the_resolved_image_while_env_changes(
    sandbox, namespace, client, tmp_path
):
    image_stream(client, namespace, "dc1", {"latest": OLD})
    create_group(client, namespace, [latest_dc("dc1")])
    resolved = client.get(DEPLOYMENT_CONFIGS, "dc1", namespace=namespace)["spec"]["template"]["spec"][
        "containers"
    ][0]["image"]
    assert "@sha256:" in resolved
    manifest = latest_dc("dc1")  # as the template has it: image ' ', the trigger fills it in
    manifest["spec"]["template"]["spec"]["containers"][0]["env"] = ENV
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", "-",
                       stdin=as_yaml([manifest]), report=tmp_path / "r.json")  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    container = client.get(DEPLOYMENT_CONFIGS, "dc1", namespace=namespace)["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert container["image"] == resolved and container["env"] == ENV
    assert view(client, namespace, DC, "dc1").revision == 2
    assert all(c["env"] == ENV and c["image"] == resolved for c in pod_templates(client, namespace, "dc1"))


def test_hpa_targeted_deployment_keeps_live_replicas(sandbox, namespace, client, tmp_path):
    create_group(client, namespace, [deployment_body("web", OLD, replicas=2)])
    client.create(HORIZONTAL_POD_AUTOSCALERS, {
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 1, "maxReplicas": 3},
    }, namespace=namespace)  # fmt: skip
    manifest = released(deployment_body("web", OLD, replicas=5), NEW)
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", "-",
                       stdin=as_yaml([manifest]), report=tmp_path / "r.json")  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    live = client.get(DEPLOYMENTS, "web", namespace=namespace)
    assert live["spec"]["replicas"] == 2
    assert view(client, namespace, DEPLOYMENT, "web").images == {"app": NEW}
    (entry,) = result.report["workloads"]
    assert any("HorizontalPodAutoscaler" in n for n in entry["notes"]), entry["notes"]


def test_dry_run_prints_each_workloads_template_diff_and_changes_nothing(
    sandbox, namespace, client, tmp_path
):
    create_group(client, namespace, group())
    fingerprint = resource_versions(client, namespace)
    unchanged = group()[1]  # dc2 given as it is: no change
    docs = [released(group()[0], NEW), unchanged, released(group()[2], NEW), deployment_body("extra", NEW)]
    results = tmp_path / "results"
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f", "-", "--dry-run",
                       "--results-dir", str(results), stdin=as_yaml(docs), timeout=60,
                       report=tmp_path / "dry.json")  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    out = result.stdout
    assert f"{namespace}/dc/dc1: rollout (metadata.labels, spec.template)" in out, out
    assert f"{namespace}/dc/dc2: rollout (no change)" in out, out
    assert f"{namespace}/deployment/extra: create" in out, out
    for line in ("+        - name: FEATURE", "+          value: 'on'", "+    release: r2", "+            cpu: 200m",
                 f"-      - image: {OLD}", f"+        image: {NEW}"):  # fmt: skip
        assert line in out, (line, out)
    assert "dry run: 3 of 4 workloads would change; nothing was changed" in out, out
    assert resource_versions(client, namespace) == fingerprint
    # the report and the Tekton results say a dry run, never a rollout that succeeded: nothing was rolled out
    report = result.report
    assert report["status"] == "dry-run" and report["exit_code"] == 0 and not report["run_id"], report
    assert (results / "status").read_text() == "dry-run"
    assert (results / "summary").read_text().startswith("dry-run: 3 planned, 1 unchanged")
    entries = {f"{w['kind']}/{w['name']}": w for w in report["workloads"]}
    assert {k: w["outcome"] for k, w in entries.items()} == {
        "DeploymentConfig/dc1": "planned",
        "DeploymentConfig/dc2": "unchanged",
        "Deployment/web": "planned",
        "Deployment/extra": "planned",
    }
    dc1 = entries["DeploymentConfig/dc1"]
    live_dc1 = view(client, namespace, DC, "dc1")
    assert dc1["images_before"] == live_dc1.images == {"app": OLD} and dc1["images_after"] == {"app": NEW}
    assert dc1["revision_after"] == dc1["revision_before"] == live_dc1.revision  # nothing rolled out
    assert entries["DeploymentConfig/dc2"]["images_after"] == {"app": OLD}
    assert (
        entries["Deployment/extra"]["images_before"] == {}
        and "would be created" in entries["Deployment/extra"]["notes"]
    )
    assert all(not w["pods"] for w in report["workloads"])


def test_revert_after_a_killed_manifest_run_deletes_the_workload_it_created(
    sandbox, namespace, client, tmp_path
):
    """A `rollout -f` killed while watching (it had created deployment/extra), then `rollguard revert -l`:
    the group back on its old templates and extra deleted, as its journal recorded it as created."""
    import signal

    from tests.helpers.chaos import expire_lease
    from tests.helpers.cluster import IMAGE, journal_reaches, start_rollguard

    create_group(client, namespace, group())
    slow = f"{IMAGE}:v2-slow60"  # the run is still watching when it is killed
    proc = start_rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR, "-f",
                           str(_write(tmp_path / "r.yaml", release(dc2_image=slow))))  # fmt: skip
    record = journal_reaches(client, namespace, "watching")
    assert record["workloads"]["deployment/extra"]["created"] is True
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert client.get(DEPLOYMENTS, "extra", namespace=namespace)
    expire_lease(client, namespace)
    preview = rollguard(sandbox.kubeconfig, "revert", "-n", namespace, "-l", SELECTOR, "--dry-run")
    assert preview.code == 0, preview.stdout + preview.stderr
    assert "deployment/extra: revert: delete it" in preview.stdout, preview.stdout
    assert "template: containers[app].env changed" in preview.stdout or "env changed" in preview.stdout, (
        preview.stdout
    )
    assert "restores metadata.labels" in preview.stdout, preview.stdout
    result = rollguard(
        sandbox.kubeconfig, "revert", "-n", namespace, "-l", SELECTOR, report=tmp_path / "rev.json"
    )
    assert result.code == 0, result.stdout + result.stderr
    assert "deployment/extra: deleting it" in result.stdout, result.stdout
    assert not [
        d for d in client.list(DEPLOYMENTS, namespace=namespace)["items"] if d["metadata"]["name"] == "extra"
    ]
    for kind, name in ((DC, "dc1"), (DC, "dc2"), (DEPLOYMENT, "web")):
        state = view(client, namespace, kind, name)
        assert state.images == {"app": OLD} and state.complete and not state.paused, name
        live = client.get(KINDS[kind].resource, name, namespace=namespace)
        assert not live["spec"]["template"]["spec"]["containers"][0].get("env"), name
        assert "release" not in live["metadata"]["labels"], name


def _write(path: Path, docs: list[Obj]) -> Path:
    path.write_text(as_yaml(docs))
    return path
