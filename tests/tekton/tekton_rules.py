"""Tekton's and OpenDevStack's rules, applied to the YAML a reader copies from the docs.

Each YAML block of docs/tekton.md, docs/opendevstack.md and docs/migrating.md is checked as what it is:
a TaskRun, PipelineRun or Pipeline (`tekton.dev/v1`), an `ods.yaml`, a fragment of one of these (a list
of pipeline tasks, or a mapping with `tasks`/`finally`), or a Kubernetes object the walkthrough creates
(PersistentVolumeClaim, Deployment, DeploymentConfig). Every Task a block names is resolved to its real
definition: ours from tekton/, OpenDevStack's as released (copied into tests/tekton/ods/, SOURCES.md
there names version and commit), and what the ODS pipeline manager adds (`start`, `finish`, the
pipeline's params and its `shared-workspace`).

The rules, with where Tekton enforces them (tektoncd/pipeline):
- `$(tasks.X.results.Y)`: X is a pipeline task and Y a result its Task declares
  (pkg/reconciler/pipelinerun/resources/validate_dependencies.go, ValidatePipelineTaskResults: the
  PipelineRun fails with InvalidTaskResultReference before any task runs); a task outside `finally` may
  not read a `finally` task; `$(tasks.X.status)` and `$(tasks.status)` only in `finally`
  (pkg/apis/pipeline/v1/pipeline_validation.go, validateExecutionStatusVariables).
- `$(params.P)` of a Pipeline names a Pipeline param (pipeline_validation.go,
  ValidatePipelineParameterVariables); inside a Task or taskSpec, `$(params|results|workspaces.*)`
  name its own declarations (task_validation.go).
- Params given to a Task: no required one missing (pkg/reconciler/taskrun/validate_taskrun.go,
  "missing values for these params which have no default values"), string vs array as declared
  (wrongTypeParamsNames); a param the Task does not declare is ignored by Tekton, which hides a typo, so
  it is refused here too.
- Workspaces: a pipeline task binds only workspaces its Task declares, to workspaces its Pipeline
  declares, and every non-optional one (pipeline_validation.go, validatePipelineWorkspacesUsage;
  pkg/reconciler/taskrun/resources/apply.go); a TaskRun's bindings have one volume source each.
- Names: pipeline task and step names are DNS-1123 labels (pipeline_validation.go,
  validatePipelineTaskName); `runAfter` names tasks of the same Pipeline; timeouts are Go durations.
- `ods.yaml`: decoded strictly (opendevstack/ods-pipeline pkg/config/ods.go, yaml.UnmarshalStrict with
  DisallowUnknownFields), so unknown keys fail; the manager's assembly (internal/manager/pipeline.go,
  assemblePipelineSpec) adds `start` first and `finish` last, trigger params `task.param` go to that task.
And this project's own: a value never pasted into a script (only through env), each result an inline
taskSpec declares is written by a step.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

from tests.tekton.manifests import REFERENCE, ROOT, TASK_FILE, TEKTON, Obj, go_duration, load_one, references

ODS_DATA = Path(__file__).with_name("ods")
# Git-resolver coordinates (url, revision, pathInRepo) of OpenDevStack's released Tasks -> their copies.
ODS_TASKS = {
    ("https://github.com/opendevstack/ods-pipeline-image.git", "v0.3.0", "tasks/package.yaml"):
        "ods-pipeline-image-v0.3.0-tasks-package.yaml",
    ("https://github.com/opendevstack/ods-pipeline-go.git", "v0.1.2", "tasks/build.yaml"):
        "ods-pipeline-go-v0.1.2-tasks-build.yaml",
}  # fmt: skip
# What ODS Pipeline 0.15's manager adds to every pipeline (internal/manager/pipeline.go).
ODS_MANAGER_TASKS = {"ods-pipeline-start": "ods-pipeline-v0.15.0-task-start.yaml",
                     "ods-pipeline-finish": "ods-pipeline-v0.15.0-task-finish.yaml"}  # fmt: skip
ODS_PIPELINE_PARAMS = (
    "repository",
    "project",
    "component",
    "git-repo-url",
    "git-full-ref",
    "pr-key",
    "pr-base",
)
ODS_WORKSPACE = "shared-workspace"
ODS_KEYS = {"repositories", "pipelines"}
ODS_PIPELINE_KEYS = {"triggers", "tasks", "finally", "timeouts", "podTemplate", "taskRunSpecs"}
ODS_TRIGGER_KEYS = {
    "events",
    "branches",
    "exceptBranches",
    "tags",
    "exceptTags",
    "prComment",
    "pipeline",
    "params",
}
# tekton.dev/v1 PipelineTask's fields (pkg/apis/pipeline/v1/pipeline_types.go)
PIPELINE_TASK_KEYS = {"name", "displayName", "description", "taskRef", "taskSpec", "when", "runAfter", "retries",
                      "params", "matrix", "workspaces", "timeout", "pipelineRef", "pipelineSpec", "onError"}  # fmt: skip
# Our Task as a git resolver fetches it from the reader's copy of this repository (any URL and revision).
OUR_TASK_PATHS = {"tekton/task-rollout.yaml": TASK_FILE}
OUR_TASKS = {"rollguard-rollout": TASK_FILE}
OUR_PIPELINES = {
    "rollguard-build-image": TEKTON / "build-image.yaml",
    "build-and-rollout": TEKTON / "pipeline-example.yaml",
}
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
PARAM_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.-]*$")
PIPELINE_CONTEXT = {
    "pipelineRun.name",
    "pipelineRun.namespace",
    "pipelineRun.uid",
    "pipeline.name",
    "pipelineTask.retries",
}
TASK_CONTEXT = {"taskRun.name", "taskRun.namespace", "taskRun.uid", "task.name", "task.retry-count"}
VOLUME_SOURCES = {
    "persistentVolumeClaim",
    "emptyDir",
    "configMap",
    "secret",
    "volumeClaimTemplate",
    "csi",
    "projected",
}
ACCESS_MODES = {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"}
QUANTITY = re.compile(r"^\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")


class Problems(list[str]):
    def add(self, where: str, text: str) -> None:
        self.append(f"{where}: {text}")


def ods_task(file: str) -> Obj:
    return load_one(ODS_DATA / file)


def resolve(holder: Obj, where: str, problems: Problems) -> Obj | None:
    """The Task spec a pipeline task or TaskRun spec runs: inline, ours by name, or by the git resolver."""
    if "taskSpec" in holder:
        spec = holder["taskSpec"]
        if not isinstance(spec, dict):
            problems.add(where, f"taskSpec is {spec!r}, not a Task spec a reader can copy")
            return None
        return spec
    ref = holder.get("taskRef") or {}
    if ref.get("resolver") == "git":
        params = {p["name"]: p["value"] for p in ref.get("params", [])}
        path = params.get("pathInRepo", "")
        if path in OUR_TASK_PATHS:
            if not params.get("url") or not params.get("revision"):
                problems.add(where, "the git resolver needs url and revision (pin the release you install)")
            return load_one(OUR_TASK_PATHS[path])["spec"]  # type: ignore[no-any-return]
        key = (params.get("url", ""), params.get("revision", ""), path)
        if key not in ODS_TASKS:
            problems.add(
                where, f"git resolver reference {key} is not a Task this test knows (tests/tekton/ods)"
            )
            return None
        return ods_task(ODS_TASKS[key])["spec"]  # type: ignore[no-any-return]
    if ref.get("resolver"):
        problems.add(where, f"resolver {ref['resolver']!r}: not one the docs' tests can follow")
        return None
    name = ref.get("name")
    if name in ODS_MANAGER_TASKS:
        return ods_task(ODS_MANAGER_TASKS[name])["spec"]  # type: ignore[no-any-return]
    if ref.get("kind", "Task") != "Task" or name not in OUR_TASKS:
        problems.add(where, f"taskRef {ref}: no such Task here (ours are {sorted(OUR_TASKS)})")
        return None
    return load_one(OUR_TASKS[name])["spec"]  # type: ignore[no-any-return]


def check_given_params(given: list[Obj], declared: list[Obj], where: str, problems: Problems) -> None:
    specs = {p["name"]: p for p in declared}
    names = [p.get("name") for p in given]
    for name in names:
        if name not in specs:
            problems.add(where, f"param {name!r} is not declared by the Task (Tekton ignores it: a typo?)")
    if len(set(names)) != len(names):
        problems.add(where, "a param is given twice")
    for name, spec in specs.items():
        if "default" not in spec and name not in names:
            problems.add(where, f"missing values for these params which have no default values: [{name}]")
    for p in given:
        spec = specs.get(p.get("name"))
        if spec and isinstance(p.get("value"), list) != (spec.get("type", "string") == "array"):
            problems.add(where, f"param {p['name']!r} must be {spec.get('type', 'string')}")


def check_task_spec(spec: Obj, where: str, problems: Problems, *, ours: bool) -> None:
    """An embedded taskSpec (or a Task's spec): its own references, steps and results."""
    params = {p["name"] for p in spec.get("params", [])}
    results = {r["name"] for r in spec.get("results", [])}
    workspaces = {w["name"] for w in spec.get("workspaces", [])}
    for name in params | results | workspaces:
        if not PARAM_NAME.match(name):
            problems.add(where, f"{name!r} is not a valid name")
    for kind, rest in references(spec):
        name, _, attr = rest.partition(".")
        if kind == "params" and re.sub(r"\[(\*|\d+)\]$", "", rest) not in params:
            problems.add(where, f"$(params.{rest}) is not a param of this Task")
        elif kind == "results" and (name not in results or attr != "path"):
            problems.add(where, f"$(results.{rest}) is not a result of this Task")
        elif kind == "workspaces" and (
            name not in workspaces or attr not in ("path", "bound", "claim", "volume")
        ):
            problems.add(where, f"$(workspaces.{rest}) is not a workspace of this Task")
        elif kind == "context" and rest not in TASK_CONTEXT:
            problems.add(where, f"$(context.{rest}) has no meaning in a Task")
        elif kind == "tasks":
            problems.add(where, f"$(tasks.{rest}) has no meaning inside a Task")
    steps = spec.get("steps", [])
    if not steps:
        problems.add(where, "a Task needs at least one step")
    names = [s.get("name", "") for s in steps]
    if len(set(names)) != len(names) or not all(DNS1123_LABEL.match(n) for n in names):
        problems.add(where, f"step names must be unique DNS-1123 labels: {names}")
    for s in steps:
        if not s.get("image"):
            problems.add(where, f"step {s.get('name')} has no image")
        if ours and references(s.get("script", "")):
            problems.add(where, f"step {s.get('name')}: a value pasted into the script (pass it through env)")
    if ours:
        written = {rest.split(".")[0] for kind, rest in references(steps) if kind == "results"}
        for r in sorted(results - written):
            problems.add(where, f"result {r!r} is declared but no step writes $(results.{r}.path)")


def check_pipeline(spec: Obj, where: str, problems: Problems, *, ods: bool = False) -> None:
    """A Pipeline spec (as the ODS manager assembled it, when ``ods``: its start and finish get their
    params from the manager, not from ods.yaml, and are not checked for them here)."""
    tasks, finals = spec.get("tasks", []), spec.get("finally", [])
    every = [*tasks, *finals]
    names = [t.get("name", "") for t in every]
    dag = {t["name"] for t in tasks}
    pipeline_params = {p["name"] for p in spec.get("params", [])}
    pipeline_workspaces = {w["name"] for w in spec.get("workspaces", [])}
    if len(set(names)) != len(names):
        problems.add(where, f"pipeline task names repeat: {names}")
    resolved: dict[str, Obj | None] = {}
    for t in every:
        w = f"{where}: task {t.get('name')}"
        if not DNS1123_LABEL.match(t.get("name", "")):
            problems.add(w, "a pipeline task name must be a DNS-1123 label")
        for key in set(t) - PIPELINE_TASK_KEYS:
            problems.add(w, f"unknown field {key!r}")
        resolved[t["name"]] = resolve(t, w, problems)
    for t in every:
        w = f"{where}: task {t['name']}"
        final = t in finals
        task_spec = resolved[t["name"]]
        outer = {k: v for k, v in t.items() if k != "taskSpec"}
        for kind, rest in references(outer):
            if kind == "params":
                if re.sub(r"\[(\*|\d+)\]$", "", rest) not in pipeline_params:
                    problems.add(w, f"$(params.{rest}) is not a param of the Pipeline")
            elif kind == "context":
                if rest not in PIPELINE_CONTEXT:
                    problems.add(w, f"$(context.{rest}) has no meaning in a Pipeline")
            elif kind == "workspaces":
                name, _, attr = rest.partition(".")
                if name not in pipeline_workspaces or attr != "bound":
                    problems.add(w, f"$(workspaces.{rest}) is not a Pipeline workspace's `bound`")
            elif kind == "tasks":
                check_task_reference(
                    rest, final=final, dag=dag, resolved=resolved, where=w, problems=problems
                )
            elif kind == "results":
                problems.add(w, f"$(results.{rest}) has no meaning outside a Task")
        for after in t.get("runAfter", []):
            if after not in dag or final:
                problems.add(w, f"runAfter {after!r}: no such task (or runAfter in finally)")
        if "timeout" in t:
            go_duration(str(t["timeout"]))
        if task_spec is None:
            continue
        if "taskSpec" in t:
            check_task_spec(task_spec, w, problems, ours=True)
        if not (ods and t["name"] in ("start", "finish")):  # the manager's own, as ODS passes them
            check_given_params(t.get("params", []), task_spec.get("params", []), w, problems)
        declared = {x["name"]: x for x in task_spec.get("workspaces", [])}
        bound = {b.get("name") for b in t.get("workspaces", [])}
        for b in t.get("workspaces", []):
            if b.get("name") not in declared:
                problems.add(w, f"workspace {b.get('name')!r} is not declared by the Task")
            if b.get("workspace") not in pipeline_workspaces:
                problems.add(w, f"workspace {b.get('workspace')!r} is not a workspace of the Pipeline")
        for name, x in declared.items():
            if not x.get("optional") and name not in bound:
                problems.add(w, f"expected workspace {name!r} to be provided by pipeline task")
    for s in spec.get("taskRunSpecs", []):
        if s.get("pipelineTaskName") not in names:
            problems.add(where, f"taskRunSpecs names no task: {s.get('pipelineTaskName')}")
    for r in spec.get("results", []):
        for kind, rest in references(r.get("value", "")):
            if kind == "tasks":
                check_task_reference(
                    rest, final=False, dag=dag, resolved=resolved, where=where, problems=problems
                )


def check_task_reference(rest: str, *, final: bool, dag: set[str], resolved: dict[str, Obj | None],
                         where: str, problems: Problems) -> None:  # fmt: skip
    if ".results." not in rest and (rest == "status" or rest.endswith((".status", ".reason"))):
        if not final:
            problems.add(where, f"$(tasks.{rest}) can be used only in finally")
        name = rest.rsplit(".", 1)[0]
        if rest != "status" and name not in dag:
            problems.add(where, f"$(tasks.{rest}): no such pipeline task")
        return
    name, _, result = rest.partition(".results.")
    result = re.sub(r"(\[(\*|\d+)\]|\.[\w-]+)$", "", result) if result else result
    if not result:
        problems.add(where, f"$(tasks.{rest}) is not a result reference")
    elif name not in dag:
        problems.add(where, f'invalid result reference: referenced pipeline task "{name}" does not exist')
    elif (spec := resolved.get(name)) is not None and result not in {
        r["name"] for r in spec.get("results", [])
    }:
        problems.add(
            where,
            f'invalid result reference: "{result}" is not a named result returned by pipeline task "{name}"',
        )


# -- OpenDevStack -------------------------------------------------------------------------------------


def assemble_ods(ods: Obj, where: str, problems: Problems) -> list[Obj]:
    """Each pipeline of an ods.yaml as ODS Pipeline 0.15's manager makes it a PipelineRun's spec."""
    for key in set(ods) - ODS_KEYS:
        problems.add(where, f"ods.yaml: unknown field {key!r} (pkg/config/ods.go decodes strictly)")
    specs = []
    for i, pipeline in enumerate(ods.get("pipelines", [])):
        w = f"{where}: pipelines[{i}]"
        for key in set(pipeline) - ODS_PIPELINE_KEYS:
            problems.add(w, f"unknown field {key!r}")
        trigger_params: list[Obj] = []
        for trigger in pipeline.get("triggers", []):
            for key in set(trigger) - ODS_TRIGGER_KEYS:
                problems.add(w, f"trigger: unknown field {key!r}")
            trigger_params += trigger.get("params", [])
        tasks = copy.deepcopy(pipeline.get("tasks", []))
        for j, t in enumerate(tasks):  # start goes before the first tasks without runAfter
            if j > 0 and t.get("runAfter"):
                break
            t["runAfter"] = [*t.get("runAfter", []), "start"]
        source = [{"name": "source", "workspace": ODS_WORKSPACE}]
        start = {
            "name": "start",
            "taskRef": {"kind": "Task", "name": "ods-pipeline-start"},
            "workspaces": source,
        }
        finish = {
            "name": "finish",
            "taskRef": {"kind": "Task", "name": "ods-pipeline-finish"},
            "workspaces": source,
        }
        every = [start, *tasks, *copy.deepcopy(pipeline.get("finally", [])), finish]
        for p in trigger_params:  # mergeTriggerBasedParams: "task.param" overrides the task's param
            task_name, _, param = p["name"].partition(".")
            if not param:
                continue
            target = next((t for t in every if t["name"] == task_name), None)
            if target is None:
                problems.add(w, f"trigger param {p['name']}: no task {task_name}")
                continue
            target["params"] = [
                *(q for q in target.get("params", []) if q["name"] != param),
                {"name": param, "value": p["value"]},
            ]
            if target in (start, finish):  # the manager passes the rest of their params itself
                declared = {
                    q["name"]
                    for q in ods_task(ODS_MANAGER_TASKS[target["taskRef"]["name"]])["spec"]["params"]
                }
                if param not in declared:
                    problems.add(w, f"trigger param {p['name']}: {task_name} has no param {param!r}")
        spec = {
            "params": [{"name": n, "type": "string", "default": ""} for n in ODS_PIPELINE_PARAMS],
            "workspaces": [{"name": ODS_WORKSPACE}],
            "tasks": [start, *tasks],
            "finally": [*every[len(tasks) + 1 : -1], finish],
            "taskRunSpecs": pipeline.get("taskRunSpecs", []),
        }
        specs.append(spec)
    return specs


def check_ods(ods: Obj, where: str, problems: Problems) -> None:
    for spec in assemble_ods(ods, where, problems):
        check_pipeline(spec, where, problems, ods=True)


# -- objects ------------------------------------------------------------------------------------------


def check_taskrun(obj: Obj, where: str, problems: Problems) -> None:
    spec = obj["spec"]
    task_spec = resolve(spec, where, problems)
    if task_spec is None:
        return
    check_given_params(spec.get("params", []), task_spec.get("params", []), where, problems)
    declared = {w["name"]: w for w in task_spec.get("workspaces", [])}
    for b in spec.get("workspaces", []):
        if b["name"] not in declared:
            problems.add(where, f"workspace {b['name']!r} is not declared by the Task")
        if len(set(b) & VOLUME_SOURCES) != 1:
            problems.add(where, f"workspace {b['name']!r} needs exactly one volume source")
    for name, w in declared.items():
        if not w.get("optional") and name not in {b["name"] for b in spec.get("workspaces", [])}:
            problems.add(where, f"workspace {name!r} is required")
    if "timeout" in spec:
        go_duration(spec["timeout"])
    for key in ("serviceAccount",):
        if key in spec:
            problems.add(where, f"{key} is not a tekton.dev/v1 TaskRun field (serviceAccountName is)")


def check_pipelinerun(obj: Obj, where: str, problems: Problems) -> None:
    spec = obj["spec"]
    if "pipelineSpec" in spec:
        pipeline = spec["pipelineSpec"]
    else:
        name = (spec.get("pipelineRef") or {}).get("name")
        if name not in OUR_PIPELINES:
            problems.add(where, f"pipelineRef {name!r}: not one of ours ({sorted(OUR_PIPELINES)})")
            return
        pipeline = load_one(OUR_PIPELINES[name])["spec"]
    check_given_params(spec.get("params", []), pipeline.get("params", []), where, problems)
    bound = {b["name"] for b in spec.get("workspaces", [])}
    for b in spec.get("workspaces", []):
        if len(set(b) & VOLUME_SOURCES) != 1:
            problems.add(where, f"workspace {b['name']!r} needs exactly one volume source")
    for w in pipeline.get("workspaces", []):
        if not w.get("optional") and w["name"] not in bound:
            problems.add(where, f"pipeline workspace {w['name']!r} is not bound")
    names = {t["name"] for t in [*pipeline.get("tasks", []), *pipeline.get("finally", [])]}
    for s in spec.get("taskRunSpecs", []):
        if s.get("pipelineTaskName") not in names:
            problems.add(where, f"taskRunSpecs names no task: {s.get('pipelineTaskName')}")


def labels_match(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_object(obj: Obj, where: str, problems: Problems) -> None:
    kind, api = obj.get("kind"), obj.get("apiVersion")
    w = f"{where}: {kind} {obj.get('metadata', {}).get('name') or obj.get('metadata', {}).get('generateName')}"
    if api == "tekton.dev/v1" and kind == "TaskRun":
        check_taskrun(obj, w, problems)
    elif api == "tekton.dev/v1" and kind == "PipelineRun":
        check_pipelinerun(obj, w, problems)
    elif api == "tekton.dev/v1" and kind == "Pipeline":
        check_pipeline(obj["spec"], w, problems)
    elif api == "v1" and kind == "PersistentVolumeClaim":
        spec = obj["spec"]
        if not spec.get("accessModes") or not set(spec["accessModes"]) <= ACCESS_MODES:
            problems.add(w, f"accessModes {spec.get('accessModes')}")
        if not QUANTITY.match(str(spec.get("resources", {}).get("requests", {}).get("storage", ""))):
            problems.add(w, "spec.resources.requests.storage must be a quantity")
    elif api == "apps/v1" and kind == "Deployment":
        spec = obj["spec"]
        template = spec["template"]
        if not labels_match(
            spec.get("selector", {}).get("matchLabels", {}), template["metadata"].get("labels", {})
        ):
            problems.add(w, "`selector` does not match template `labels`")
        check_containers(template["spec"], w, problems)
    elif api == "apps.openshift.io/v1" and kind == "DeploymentConfig":
        spec = obj["spec"]
        template = spec["template"]
        if not labels_match(spec.get("selector", {}), template["metadata"].get("labels", {})):
            problems.add(w, "spec.template.metadata.labels: `selector` does not match template `labels`")
        containers = {c["name"] for c in template["spec"]["containers"]}
        for trigger in spec.get("triggers", []):
            if trigger.get("type") not in ("ConfigChange", "ImageChange"):
                problems.add(w, f"trigger type {trigger.get('type')}")
            names = (trigger.get("imageChangeParams") or {}).get("containerNames", [])
            if not set(names) <= containers:
                problems.add(w, f"trigger names containers {names} the template does not have")
        check_containers(template["spec"], w, problems)
    elif kind in ("TaskRun", "PipelineRun", "Pipeline", "Task"):
        problems.add(w, f"apiVersion {api}: the docs use tekton.dev/v1")
    else:
        problems.add(
            w, f"{api} {kind}: no rules for this kind here; add them to tests/tekton/tekton_rules.py"
        )


def check_containers(pod: Obj, where: str, problems: Problems) -> None:
    for c in pod.get("containers", []):
        if not DNS1123_LABEL.match(c.get("name", "")) or not c.get("image"):
            problems.add(where, f"container {c.get('name')}: a DNS-1123 name and an image are required")


def check_block(block: Any, where: str, problems: Problems, *, ods_base: Obj | None = None) -> None:
    """One YAML block of a doc, whatever it holds (see the module docstring)."""
    if isinstance(block, dict) and "pipelines" in block:
        check_ods(block, where, problems)
    elif isinstance(block, dict) and "apiVersion" in block:
        check_object(block, where, problems)
    elif isinstance(block, dict) and ("tasks" in block or "finally" in block):
        fragment_pipeline(block, where, problems, ods_base)
    elif isinstance(block, list) and block and all(isinstance(t, dict) and "name" in t for t in block):
        fragment_pipeline({"tasks": block}, where, problems, ods_base)
    elif isinstance(block, dict) and set(block) == {"checks"}:
        check_checks_file(block, where, problems)
    else:
        problems.add(where, f"a YAML block the docs test cannot place: {str(block)[:80]!r}")


def fragment_pipeline(fragment: Obj, where: str, problems: Problems, ods_base: Obj | None) -> None:
    """A fragment goes where the doc says it goes: into its ods.yaml (tasks with the same name replaced,
    others added) on the OpenDevStack pages, else into a Pipeline of its own whose params and
    workspaces are the ones it uses."""
    if ods_base is not None:
        ods = copy.deepcopy(ods_base)
        pipeline = ods["pipelines"][0]
        for section in ("tasks", "finally"):
            for t in fragment.get(section, []):
                existing = [x["name"] for x in pipeline.get(section, [])]
                if t["name"] in existing:
                    pipeline[section][existing.index(t["name"])] = t
                else:
                    pipeline.setdefault(section, []).append(t)
        check_ods(ods, where, problems)
        return
    tasks = [*fragment.get("tasks", []), *fragment.get("finally", [])]
    params = sorted(
        {
            m[2]
            for t in tasks
            for m in REFERENCE.finditer(yaml.safe_dump({k: v for k, v in t.items() if k != "taskSpec"}))
            if m[1] == "params"
        }
    )
    spaces = sorted({b["workspace"] for t in tasks for b in t.get("workspaces", [])})
    referenced = {
        m[2].split(".")[0] for t in tasks for m in REFERENCE.finditer(yaml.safe_dump(t)) if m[1] == "tasks"
    }
    spec = {"params": [{"name": p} for p in params], "workspaces": [{"name": w} for w in spaces],
            "tasks": list(fragment.get("tasks", [])), "finally": list(fragment.get("finally", []))}  # fmt: skip
    known = {t["name"] for t in spec["tasks"]}
    for name in sorted(referenced - known - {"status"}):
        problems.add(where, f"the fragment reads task {name!r}, which it does not show")
    check_pipeline(spec, where, problems)


def yaml_blocks(path: Path) -> list[tuple[int, Any]]:
    """(line number, parsed content) of every ```yaml block."""
    text = path.read_text()
    out = []
    for m in re.finditer(r"```yaml\n(.*?)```", text, re.S):
        line = text.count("\n", 0, m.start()) + 1
        docs = [d for d in yaml.safe_load_all(m.group(1)) if d is not None]
        out.append((line, docs[0] if len(docs) == 1 else docs))  # several: `---` between objects
    return out


def check_doc(path: Path) -> Problems:
    problems = Problems()
    blocks = yaml_blocks(path)
    ods_base = next((b for _, b in blocks if isinstance(b, dict) and "pipelines" in b), None)
    if path.name == "migrating.md":
        ods_base = yaml.safe_load(_ods_yaml_of(ROOT / "docs" / "opendevstack.md"))
    for line, block in blocks:
        where = f"{path.relative_to(ROOT)}:{line}"
        for item in block if isinstance(block, list) and block and "apiVersion" in block[0] else [block]:
            check_block(item, where, problems, ods_base=ods_base)
    return problems


def _ods_yaml_of(path: Path) -> str:
    for m in re.finditer(r"```yaml\n(.*?)```", path.read_text(), re.S):
        if "pipelines:" in m.group(1):
            return m.group(1)
    raise AssertionError(f"{path.name} shows no ods.yaml")


def check_checks_file(block: Obj, where: str, problems: Problems) -> None:
    """A ``--verify`` checks file (the Task's `verify` param): rollguard's own parser must accept it; a
    job check's manifest, which the doc names but does not show, is read as a minimal Job."""
    import yaml as _yaml

    from rollguard.core.errors import RefusedError
    from rollguard.plan.checks import parse_checks

    job = (
        "apiVersion: batch/v1\nkind: Job\nspec: {template: {spec: {restartPolicy: Never, containers: []}}}\n"
    )
    try:
        parse_checks(_yaml.safe_dump(block), source="doc", read=lambda _name: job)
    except RefusedError as exc:
        problems.add(where, f"the checks file is refused: {exc}")
