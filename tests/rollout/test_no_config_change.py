"""DCs without a ConfigChange trigger (issue 13 point 7), rolled out, reverted and redeployed on the live
sandbox the way OpenShift allows.

openshift-controller-manager pkg/apps/deploymentconfig/deploymentconfig_controller.go (triggerActivated,
hasUpdatedImages): an ImageChange trigger, automatic or manual, rolls out a changed container image by
itself; nothing else does without a ConfigChange trigger. What it does not start, rollguard asks for in
the same write with latestVersion + 1, the fallback of oc pkg/cli/rollout/latest.go that openshift-
apiserver pkg/apps/apiserver/registry/deployconfig/strategy.go (PrepareForUpdate) honours; emulated in
sandbox/openshift/latestversion.py and tested there by tests/sandbox/test_latest_version.py.
"""

from __future__ import annotations

from pathlib import Path

from rollguard.cluster.client import Client
from rollguard.core.resources import DEPLOYMENT_CONFIGS
from rollguard.core.structs import Obj
from tests.helpers.cluster import (
    CRASH,
    DC,
    NEW,
    OLD,
    SELECTOR,
    dc_body,
    rolled_out,
    rollguard,
    view,
    wait_until,
)
from tests.helpers.scenarios import edit, image_change_trigger, image_stream


def _rollout_latest(client: Client, namespace: str, name: str) -> None:
    """`oc rollout latest` without the instantiate subresource: latestVersion + 1 on the main resource."""

    def bump(dc: Obj) -> None:
        dc["status"] = {
            **(dc.get("status") or {}),
            "latestVersion": int(dc["status"].get("latestVersion") or 0) + 1,
        }

    edit(client, DEPLOYMENT_CONFIGS, namespace, name, bump)


def _group(client: Client, namespace: str) -> dict[str, dict[str, str]]:
    """dc/auto (automatic ImageChange trigger only), dc/manual (manual ImageChange trigger only) and
    dc/bare (no trigger), each complete at revision 1 on OLD (dc/auto: on what api:latest resolves OLD
    to); their images by name."""
    image_stream(client, namespace, "api", {"latest": OLD})
    bodies = {
        "auto": dc_body("auto", " ", triggers=[image_change_trigger("api:latest")]),
        "manual": dc_body("manual", OLD, triggers=[image_change_trigger("api:latest", automatic=False)]),
        "bare": dc_body("bare", OLD, triggers=[]),
    }
    for body in bodies.values():
        client.create(DEPLOYMENT_CONFIGS, body, namespace=namespace)
    for name in ("manual", "bare"):  # no trigger of theirs starts the first rollout
        wait_settled(client, namespace, name)
        _rollout_latest(client, namespace, name)
    ran = {}
    for name in bodies:
        rolled_out(client, DC, namespace, name)
        state = view(client, namespace, DC, name)
        assert state.revision == 1 and (name == "auto" or state.images == {"app": OLD}), state
        ran[name] = state.images
    return ran


def wait_settled(client: Client, namespace: str, name: str) -> None:
    """Until the controller has seen the DC (and, without a trigger of its own, made no RC)."""
    wait_until(client, DEPLOYMENT_CONFIGS, namespace, name,
               lambda d: (d.get("status") or {}).get("observedGeneration") == d["metadata"]["generation"])  # fmt: skip


def test_dcs_without_a_config_change_trigger_roll_out(sandbox, namespace, client, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A new image in each: the image triggers start dc/auto's and dc/manual's rollouts (dc/auto's trigger
    made manual, so that its tag does not take the image back); dc/bare's is asked for with latestVersion
    + 1 and said in its notes. One rollout each, all verified."""
    _group(client, namespace)
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
        "--image", f"dc/auto={NEW}", "--image", f"dc/manual={NEW}", "--image", f"dc/bare={NEW}",
        report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    for name in ("auto", "manual", "bare"):
        state = view(client, namespace, DC, name)
        assert state.images == {"app": NEW} and state.complete and not state.paused, state
        assert state.revision == 2, state  # exactly one rollout
    notes = {w["name"]: w["notes"] for w in result.report["workloads"]}
    assert any("latestVersion 1 -> 2" in n for n in notes["bare"]), notes
    assert not any("latestVersion" in n for n in notes["manual"] + notes["auto"]), notes


def test_a_failed_rollout_of_them_is_reverted(sandbox, namespace, client, tmp_path: Path):  # type: ignore[no-untyped-def]
    """dc/bare's new image crashes: the group goes back to OLD, each revert a rollout of its own (started
    by the image triggers, and for dc/bare by latestVersion + 1), none paused."""
    ran = _group(client, namespace)
    result = rollguard(
        sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
        "--image", f"dc/auto={NEW}", "--image", f"dc/manual={NEW}", "--image", f"dc/bare={CRASH}",
        report=tmp_path / "report.json",
    )  # fmt: skip
    assert result.code == 1, result.stdout + result.stderr
    assert result.report["error"].startswith("dc/bare"), result.report["error"]
    for name in ("auto", "manual", "bare"):
        state = view(client, namespace, DC, name)
        assert state.images == ran[name] and state.complete and not state.paused, state
    auto = client.get(DEPLOYMENT_CONFIGS, "auto", namespace=namespace)
    assert auto["spec"]["triggers"][0]["imageChangeParams"].get("automatic") is True  # restored as it was
    notes = {w["name"]: w["notes"] for w in result.report["workloads"]}
    assert any(n.startswith("revert: rolled out by latestVersion 2 -> 3") for n in notes["bare"]), notes


def test_they_are_redeployed_and_reverted_to_a_revision(sandbox, namespace, client, tmp_path: Path):  # type: ignore[no-untyped-def]
    """`rollguard redeploy` of a DC whose triggers ignore its annotation, and `revert --to-revision`:
    each a new verified rollout, as `oc rollout latest` / `oc rollout undo` would make."""
    _group(client, namespace)
    for name in ("manual", "bare"):
        result = rollguard(sandbox.kubeconfig, "redeploy", "-n", namespace, f"dc/{name}")
        assert result.code == 0, result.stdout + result.stderr
        state = view(client, namespace, DC, name)
        assert state.revision == 2 and state.images == {"app": OLD} and state.complete, state
    result = rollguard(sandbox.kubeconfig, "rollout", "-n", namespace, "-l", SELECTOR,
                       "--image", f"dc/bare={NEW}", "--image", f"dc/manual={NEW}")  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    for name in ("manual", "bare"):
        result = rollguard(sandbox.kubeconfig, "revert", "-n", namespace, f"dc/{name}", "--to-revision", "1")
        assert result.code == 0, result.stdout + result.stderr
        state = view(client, namespace, DC, name)
        assert state.revision == 4 and state.images == {"app": OLD} and state.complete, state
        assert not state.paused
