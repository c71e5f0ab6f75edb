"""The Tekton Task, the example Pipeline and the drift-check CronJob, checked against Tekton's rules
and against rollguard's real command line (its argparse parser, not a copied list of flags)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from rollguard.core.errors import RefusedError
from rollguard.plan.inputs import STEP_OVERHEAD, check_step_budget, parse_duration
from tests.tekton.manifests import (
    CONTEXT_VARIABLES,
    CRONJOB_FILE,
    HYPHENATED,
    PIPELINE_FILE,
    Obj,
    flags_in,
    go_duration,
    load_all,
    load_one,
    options_of,
    references,
    required_options_of,
    run_step,
    step,
    subparsers,
    task,
)

CATALOG_ANNOTATIONS = (
    "tekton.dev/pipelines.minVersion",
    "tekton.dev/categories",
    "tekton.dev/tags",
    "tekton.dev/displayName",
    "tekton.dev/platforms",
)
REVERT_MARGIN = 180  # preflight, cache sync, lock, promotion wait and settling, on top of 2 x timeout


@pytest.fixture(scope="module")
def task_obj() -> Obj:
    return task()


def declared(task_obj: Obj, section: str) -> dict[str, Obj]:
    return {item["name"]: item for item in task_obj["spec"].get(section, [])}


def test_task_follows_the_tekton_catalog_conventions(task_obj: Obj) -> None:
    assert task_obj["apiVersion"] == "tekton.dev/v1"
    assert task_obj["kind"] == "Task"
    assert task_obj["metadata"]["name"] == "rollguard-rollout"
    annotations = task_obj["metadata"]["annotations"]
    for key in CATALOG_ANNOTATIONS:
        assert str(annotations.get(key, "")).strip(), f"annotation {key} missing"
    assert re.fullmatch(r"\d+\.\d+\.\d+", annotations["tekton.dev/pipelines.minVersion"])
    # The catalog's Task-version form (major.minor), and every platform the base image is built for.
    assert re.fullmatch(r"\d+\.\d+", task_obj["metadata"]["labels"]["app.kubernetes.io/version"])
    platforms = annotations["tekton.dev/platforms"].split(",")
    assert platforms and all(
        re.fullmatch(r"linux/[a-z0-9]+", p) for p in platforms
    )  # which: test_platforms.py
    assert len(task_obj["spec"]["description"]) > 80


@pytest.mark.parametrize("section", ["params", "results", "workspaces"])
def test_every_declaration_is_hyphenated_and_described(task_obj: Obj, section: str) -> None:
    items = task_obj["spec"][section]
    assert items
    for item in items:
        assert HYPHENATED.fullmatch(item["name"]), f"{section}: {item['name']} is not lower-case-hyphenated"
        assert len(str(item.get("description", "")).strip()) > 15, (
            f"{section}: {item['name']} has no description"
        )


def test_the_brief_params_results_and_workspaces_exist(task_obj: Obj) -> None:
    params = declared(task_obj, "params")
    for name in ("namespace", "selector", "images", "promote-from", "tag", "timeout", "on-paused", "image"):
        assert name in params
    assert params["images"]["type"] == "array"
    assert set(declared(task_obj, "results")) == {"status", "summary"}
    workspaces = declared(task_obj, "workspaces")
    assert workspaces["kubeconfig-dir"].get("optional") is True
    assert any(w.get("optional") and w["name"] != "kubeconfig-dir" for w in workspaces.values())


def test_every_reference_is_declared_and_every_param_used(task_obj: Obj) -> None:
    params, results = declared(task_obj, "params"), declared(task_obj, "results")
    workspaces = declared(task_obj, "workspaces")
    used_params = set()
    for kind, rest in references(task_obj["spec"]):
        if kind == "params":
            name = re.sub(r"\[(\*|\d+)\]$", "", rest)
            assert name in params, f"$(params.{rest}) is not declared"
            used_params.add(name)
        elif kind == "results":
            name, _, attr = rest.partition(".")
            assert name in results and attr == "path", f"$(results.{rest})"
        elif kind == "workspaces":
            name, _, attr = rest.partition(".")
            assert name in workspaces and attr in ("path", "bound", "claim", "volume"), (
                f"$(workspaces.{rest})"
            )
        elif kind == "context":
            assert rest in CONTEXT_VARIABLES, f"$(context.{rest})"
        else:
            pytest.fail(f"$({kind}.{rest}) has no meaning inside a Task")
    assert used_params == set(params), f"declared but never used: {set(params) - used_params}"


def test_results_are_exactly_what_rollguard_writes(task_obj: Obj, tmp_path: Path) -> None:
    from rollguard.core.report import Report, write_results

    write_results(
        Report(status="refused", command="rollout", namespace="ns", selector="a=b", error="x"), str(tmp_path)
    )
    assert {p.name for p in tmp_path.iterdir()} == set(declared(task_obj, "results"))
    for path in tmp_path.iterdir():
        text = path.read_text()
        assert not text.endswith("\n") and len(text.encode()) < 1024


def test_array_param_reaches_the_step_only_as_a_whole_args_item(task_obj: Obj) -> None:
    """Tekton expands `$(params.images[*])` into separate arguments only as an entire `args` item."""
    s = step(task_obj)
    assert s["args"] == ["$(params.images[*])"]
    elsewhere = [x for x in (json.dumps(s["env"]), s["script"]) if "params.images" in x]
    assert not elsewhere


def test_script_text_holds_no_tekton_variables(task_obj: Obj) -> None:
    """Tekton pastes variables into a script's text; values with quotes or $(...) would become code."""
    assert not references(step(task_obj)["script"])


def test_step_flags_are_real_rollout_options(task_obj: Obj) -> None:
    script = step(task_obj)["script"]
    rollout = subparsers()["rollout"]
    flags = flags_in(script)
    assert flags, "no flags found in the script"
    assert flags <= options_of(rollout), f"not options of `rollguard rollout`: {flags - options_of(rollout)}"
    assert required_options_of(rollout) <= flags
    assert re.search(r"^\s*exec rollguard \"\$@\"\s*$", script, re.M), (
        "rollguard must be exec'd (SIGTERM, exit code)"
    )
    assert re.search(r"set -- rollout ", script)


def test_step_runs_as_non_root_with_a_pinned_image(task_obj: Obj) -> None:
    s = step(task_obj)
    sc = s["securityContext"]
    assert sc["runAsNonRoot"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert sc["seccompProfile"]["type"] == "RuntimeDefault"
    assert "runAsUser" not in sc, "OpenShift assigns the UID; a fixed one breaks restricted SCCs"
    assert s["image"] == "$(params.image)"
    image = declared(task_obj, "params")["image"]
    # No default that does not exist: required, or a real reference the build produces, never a
    # placeholder digest (sha256:000..., one repeated hex digit) that fails every run on image pull.
    if "default" in image:
        default = image["default"]
        assert re.fullmatch(r"[a-z0-9.-]+(?::\d+)?/[a-z0-9._/-]+@sha256:[0-9a-f]{64}", default), default
        assert len(set(default.rpartition(":")[2])) > 4, f"a placeholder digest: {default}"
    assert "build-image.yaml" in image["description"], "the param must say where the image comes from"
    if sc.get("readOnlyRootFilesystem"):
        env = {e["name"]: e["value"] for e in s["env"]}
        mounts = {m["mountPath"] for m in s["volumeMounts"]}
        assert env["HOME"] in mounts and env["TMPDIR"] in mounts, "HOME and TMPDIR must be writable"


def test_step_timeout_leaves_room_for_the_revert(task_obj: Obj) -> None:
    """Tekton's step timeout is a SIGKILL: it must come after rollguard's own rollout + revert deadlines,
    and the TaskRun timeout in the example after the step's."""
    step_timeout = go_duration(step(task_obj)["timeout"])
    rollout_timeout = parse_duration(declared(task_obj, "params")["timeout"]["default"])
    assert step_timeout >= 2 * rollout_timeout + REVERT_MARGIN
    limit = (step_timeout - REVERT_MARGIN) // 2
    assert f"{limit // 60}m" in declared(task_obj, "params")["timeout"]["description"]
    # rollguard is told the step's budget and enforces the same limit the description states.
    env = {e["name"]: e["value"] for e in step(task_obj)["env"]}
    assert go_duration(env["RG_STEP_TIMEOUT"]) == step_timeout, "RG_STEP_TIMEOUT must equal the step timeout"
    assert '--step-timeout "$RG_STEP_TIMEOUT"' in step(task_obj)["script"]
    assert STEP_OVERHEAD == REVERT_MARGIN
    check_step_budget(timeout=limit, step_timeout=step_timeout)
    with pytest.raises(RefusedError):
        check_step_budget(timeout=limit + 1, step_timeout=step_timeout)
    pipeline = load_one(PIPELINE_FILE)
    rollout_tasks = [
        t for t in pipeline["spec"]["tasks"] if t.get("taskRef", {}).get("name") == "rollguard-rollout"
    ]
    assert rollout_tasks and all(go_duration(t["timeout"]) > step_timeout for t in rollout_tasks)


# -- the step's script, run by a real shell with Tekton's substitutions and a fake rollguard ----------

SHELLS = [s for s in ("sh", "bash", "dash") if shutil.which(s)]
IMAGE = "image-registry.openshift-image-registry.svc:5000/shop-cd/rollguard@sha256:" + "4e" * 32
TRICKY = "dc/weird=repo.local/x:1 $(touch pwned) `id` 'q' \"dq\" ; rm -rf /"

SCENARIOS: dict[str, tuple[dict[str, str], dict[str, list[str]], set[str]]] = {
    "images": (
        {"namespace": "shop-dev", "selector": "app=shop,tier in (api, web)", "image": IMAGE},
        {"images": ["dc/api=reg.local/api@sha256:" + "a" * 64, "deployment/web/nginx=reg.local/web:2", TRICKY]},
        set(),
    ),
    "promote-no-images": (
        {"namespace": "shop-dev", "selector": "app=shop", "promote-from": "shop-cd", "tag": "0a1b2c3",
         "image": IMAGE},
        {},
        set(),
    ),
    "workspaces-bound": (
        {"namespace": "shop-dev", "selector": "app=shop", "timeout": "90s", "on-paused": "refuse",
         "report-file": "deploy/report one.json", "image": IMAGE},
        {"images": ["deploy/web=reg.local/web:3"]},
        {"kubeconfig-dir", "report"},
    ),
    "checks": (
        {"namespace": "shop-dev", "selector": "app=shop", "verify": "deploy/checks one.yaml", "bake": "2m",
         "image": IMAGE},
        {"images": ["deploy/web=reg.local/web:3"]},
        {"source"},
    ),
}  # fmt: skip


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_step_command_line_parses_as_intended(
    task_obj: Obj, shell: str, scenario: str, tmp_path: Path
) -> None:
    from rollguard.cli import build_parser

    params, arrays, bound = SCENARIOS[scenario]
    argv, env = run_step(task_obj, params, arrays, bound=bound, tmp_path=tmp_path, shell=shell)
    args = build_parser().parse_args(argv)
    assert args.command == "rollout"
    assert args.namespace == params["namespace"] and args.selector == params["selector"]
    assert args.image == arrays.get("images", [])
    assert args.promote_from == (params.get("promote-from") or None)
    assert args.tag == (params.get("tag") or None)
    assert args.timeout == params.get("timeout", "10m")
    assert args.step_timeout == step(task_obj)["timeout"]
    assert args.on_paused == params.get("on-paused", "take-over")
    assert args.results_dir == "/tekton/results"
    if "kubeconfig-dir" in bound:
        assert args.kubeconfig == "/workspace/kubeconfig-dir/kubeconfig"
    else:
        assert args.kubeconfig is None
    if "report" in bound:
        assert args.report == f"/workspace/report/{params['report-file']}"
    else:
        assert args.report is None
    assert args.verify == ([f"/workspace/source/{params['verify']}"] if "verify" in params else [])
    assert args.bake == (params.get("bake") or None)
    assert env["ROLLGUARD_ACTOR"] == "tekton myproj-cd/deploy-1-rollout"


# -- the example Pipeline -----------------------------------------------------------------------------


def test_pipeline_example_uses_the_task_as_declared(task_obj: Obj) -> None:
    pipeline = load_one(PIPELINE_FILE)
    assert pipeline["apiVersion"] == "tekton.dev/v1" and pipeline["kind"] == "Pipeline"
    spec = pipeline["spec"]
    pipeline_params = {p["name"] for p in spec.get("params", [])}
    pipeline_workspaces = {w["name"] for w in spec.get("workspaces", [])}
    everything = [*spec["tasks"], *spec.get("finally", [])]
    names = [t["name"] for t in spec["tasks"]]
    task_params, task_workspaces = declared(task_obj, "params"), declared(task_obj, "workspaces")
    task_results = declared(task_obj, "results")
    # An embedded taskSpec's own $(params.x) refer to its own params, not the Pipeline's.
    outer = {k: v for k, v in spec.items() if k not in ("tasks", "finally")}
    outer["tasks"] = [{k: v for k, v in t.items() if k != "taskSpec"} for t in everything]
    for kind, rest in references(outer):
        if kind == "params":
            assert rest in pipeline_params, f"$(params.{rest}) is not a Pipeline param"
        elif kind == "tasks":
            name, _, result = rest.partition(".results.")
            if not result:  # $(tasks.NAME.status), allowed in finally only
                name, _, attr = rest.rpartition(".")
                assert attr == "status" and any(t["name"] == name for t in everything)
                continue
            assert name in names, f"$(tasks.{rest}): no such pipeline task"
            if spec["tasks"][names.index(name)].get("taskRef", {}).get("name") == "rollguard-rollout":
                assert result in task_results
    for t in everything:
        if "taskSpec" in t:
            own = {p["name"] for p in t["taskSpec"].get("params", [])}
            used = {rest for kind, rest in references(t["taskSpec"]) if kind == "params"}
            assert used <= own and {p["name"] for p in t.get("params", [])} == own, t["name"]
    ours = [t for t in spec["tasks"] if t.get("taskRef", {}).get("name") == "rollguard-rollout"]
    assert ours
    for t in spec["tasks"]:
        assert set(t.get("runAfter", [])) <= set(names)
        for w in t.get("workspaces", []):
            assert w["workspace"] in pipeline_workspaces
    for t in ours:
        given = {p["name"]: p["value"] for p in t["params"]}
        assert set(given) <= set(task_params), f"unknown params: {set(given) - set(task_params)}"
        required = {n for n, p in task_params.items() if "default" not in p}
        assert required <= set(given)
        for name, value in given.items():
            want = task_params[name].get("type", "string")
            assert isinstance(value, list) == (want == "array"), f"param {name} must be {want}"
        assert {w["name"] for w in t.get("workspaces", [])} <= set(task_workspaces)
        assert t.get("runAfter"), "the rollout runs after the build"


def test_pipeline_surfaces_the_rollout_status_on_failure() -> None:
    """Pipeline results from a failed task are dropped before Tekton v1.10; a finally task gets them."""
    spec = load_one(PIPELINE_FILE)["spec"]
    rollout = next(
        t["name"] for t in spec["tasks"] if t.get("taskRef", {}).get("name") == "rollguard-rollout"
    )
    finals = spec.get("finally", [])
    given = {p["value"] for t in finals for p in t.get("params", [])}
    assert f"$(tasks.{rollout}.results.status)" in given and f"$(tasks.{rollout}.results.summary)" in given
    for t in finals:  # values reach the finally script through env, never pasted into its text
        for s in t.get("taskSpec", {}).get("steps", []):
            assert not references(s.get("script", ""))


# -- the drift-check CronJob (a colleague's file): same treatment when it exists ---------------------


def cron_containers(doc: Obj) -> list[Obj]:
    pod = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    containers: list[Obj] = pod.get("containers", [])
    return containers


def rollguard_argv(container: Obj) -> list[str]:
    """The rollguard command line a container runs, directly or inside a `sh -c` script."""
    command: list[Any] = container.get("command") or []
    args: list[Any] = container.get("args") or []
    if not command:  # the image's ENTRYPOINT ["rollguard"] gets the args
        return [str(a) for a in args]
    if Path(str(command[0])).name == "rollguard":
        return [str(w) for w in [*command[1:], *args]]
    for w in [*command, *args]:
        m = re.search(r"(?:^|[\s;&|(])(?:exec\s+)?rollguard\s+([^\n;&|]*)", str(w))
        if m:
            return shlex.split(m.group(1), comments=True)
    raise AssertionError(f"container {container.get('name')} does not run rollguard: {command + args}")


def test_drift_check_cronjob_uses_real_options() -> None:
    if not CRONJOB_FILE.exists():
        pytest.skip(f"{CRONJOB_FILE.name} is not there (yet)")
    docs = [d for d in load_all(CRONJOB_FILE) if d.get("kind") == "CronJob"]
    assert docs, "no CronJob in the file"
    commands = subparsers()
    for doc in docs:
        assert doc["apiVersion"] == "batch/v1"
        for container in cron_containers(doc):
            argv = rollguard_argv(container)
            sub = next((a for a in argv if not a.startswith("-")), None)
            assert sub in commands, f"`rollguard {sub}` is not a subcommand ({sorted(commands)})"
            options = {a.split("=", 1)[0] for a in argv if a.startswith("-")}
            known = options_of(commands[sub])
            assert options <= known, f"not options of {sub}: {options - known}"
            for action in commands[sub]._actions:
                if action.required and action.option_strings:
                    assert options & set(action.option_strings), f"{sub} requires {action.option_strings}"


def test_drift_check_cronjob_has_a_time_zone_and_says_how_to_set_its_image() -> None:
    text = CRONJOB_FILE.read_text()
    cron = next(d for d in load_all(CRONJOB_FILE) if d.get("kind") == "CronJob")
    assert cron["spec"]["timeZone"] == "Etc/UTC", "without timeZone the controller's local zone applies"
    image = cron_containers(cron)[0]["image"]
    sed = re.search(r'-e "s\|(image: [^|]+)\|image: \$IMAGE\|"', text)
    assert sed, "the header must say how to put the built image in"
    assert re.search(sed[1], f"image: {image}"), "the header's sed must replace the image as written"
