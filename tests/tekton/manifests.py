"""Reading the Tekton, RBAC and container files the way their consumers do, for the tests in this folder.

Also the generator of the Task's parameter and result tables in docs/tekton.md:

    .venv/bin/python -m tests.tekton.manifests docs/tekton.md     # rewrite the generated blocks
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
TEKTON = ROOT / "tekton"
TASK_FILE = TEKTON / "task-rollout.yaml"
PIPELINE_FILE = TEKTON / "pipeline-example.yaml"
RBAC_FILE = TEKTON / "rbac.yaml"
CRONJOB_FILE = TEKTON / "drift-check-cronjob.yaml"
CONTAINERFILE = ROOT / "Containerfile"
CONTAINERIGNORE = ROOT / ".containerignore"
TEKTON_DOC = ROOT / "docs" / "tekton.md"

Obj = dict[str, Any]

# $(params.x), $(params.x[*]), $(results.x.path), $(workspaces.x.bound), $(context.taskRun.name), $(tasks.t.results.r)
REFERENCE = re.compile(r"\$\((params|results|workspaces|context|tasks)\.([^()\s]+)\)")
HYPHENATED = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
CONTEXT_VARIABLES = {
    "taskRun.name", "taskRun.namespace", "taskRun.uid", "task.name", "task.retry-count",
}  # fmt: skip


def load_all(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def load_one(path: Path) -> Obj:
    docs = load_all(path)
    assert len(docs) == 1, f"{path.name}: expected one document, found {len(docs)}"
    return docs[0]


def strings(node: Any) -> Iterator[str]:
    """Every string value in a YAML tree (keys left out: Tekton substitutes values only)."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from strings(item)


def references(node: Any) -> list[tuple[str, str]]:
    """(kind, rest) of every $(...) variable in the tree, e.g. ("params", "images[*]")."""
    return [(m.group(1), m.group(2)) for s in strings(node) for m in REFERENCE.finditer(s)]


def go_duration(text: str) -> int:
    """Seconds of a Go duration such as ``25m``, ``1h30m`` or ``90s`` (Tekton's timeout fields)."""
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text.strip())
    if not parts or not text.strip():
        raise ValueError(f"not a Go duration: {text!r}")
    h, m, s = (int(p or 0) for p in parts.groups())
    return h * 3600 + m * 60 + s


# -- the CLI's parser ---------------------------------------------------------------------------------


def subparsers() -> dict[str, argparse.ArgumentParser]:
    """Subcommand name -> its parser, from the real `rollguard.cli.build_parser()`."""
    from rollguard.cli import build_parser

    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("rollguard's parser has no subcommands")


def options_of(parser: argparse.ArgumentParser) -> set[str]:
    return {opt for action in parser._actions for opt in action.option_strings}


def required_options_of(parser: argparse.ArgumentParser) -> set[str]:
    """The long form of every option the parser requires."""
    return {
        max(action.option_strings, key=len)
        for action in parser._actions
        if action.required and action.option_strings
    }


def flags_in(text: str) -> set[str]:
    """Long options written in a shell script or command line (``--name`` or ``--name=value``)."""
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text))


# -- the Task -------------------------------------------------------------------------------------------


def task() -> Obj:
    return load_one(TASK_FILE)


def step(task_obj: Obj, name: str = "rollout") -> Obj:
    steps = {s["name"]: s for s in task_obj["spec"]["steps"]}
    return steps[name]


def substitute(text: str, values: dict[str, str]) -> str:
    """Tekton's string substitution of ``$(...)`` variables (unknown ones left as they are)."""
    return REFERENCE.sub(lambda m: values.get(f"{m.group(1)}.{m.group(2)}", m.group(0)), text)


def tekton_values(
    task_obj: Obj,
    params: dict[str, str],
    *,
    bound: set[str],
    taskrun: str = "deploy-1-rollout",
    root: Path | None = None,
) -> dict[str, str]:
    """The values Tekton gives a TaskRun's string variables: params (defaults filled in), workspaces,
    results and context. With ``root``, /workspace and /tekton/results are placed under it, so a
    script can run on this machine."""
    base = "" if root is None else str(root)
    values: dict[str, str] = {}
    for p in task_obj["spec"]["params"]:
        if p.get("type", "string") == "string":
            value = params.get(p["name"], p.get("default"))
            assert value is not None, f"param {p['name']} has no default and was not given"
            values[f"params.{p['name']}"] = value
    for w in task_obj["spec"].get("workspaces", []):
        name = w["name"]
        is_bound = name in bound
        values[f"workspaces.{name}.bound"] = "true" if is_bound else "false"
        values[f"workspaces.{name}.path"] = f"{base}/workspace/{name}" if is_bound else ""
    for r in task_obj["spec"].get("results", []):
        values[f"results.{r['name']}.path"] = f"{base}/tekton/results/{r['name']}"
    values["context.taskRun.name"] = taskrun
    values["context.taskRun.namespace"] = "myproj-cd"
    return values


def step_argv(task_obj: Obj, arrays: dict[str, list[str]], values: dict[str, str]) -> list[str]:
    """The step's ``args`` after Tekton's substitution; ``$(params.x[*])`` as a whole item expands."""
    argv: list[str] = []
    for item in step(task_obj).get("args", []):
        whole = re.fullmatch(r"\$\(params\.([a-z0-9-]+)\[\*\]\)", item)
        if whole:
            default = next(p.get("default", []) for p in task_obj["spec"]["params"] if p["name"] == whole[1])
            argv.extend(arrays.get(whole[1], default))
        else:
            argv.append(substitute(item, values))
    return argv


def rendered_step(
    task_obj: Obj,
    params: dict[str, str],
    arrays: dict[str, list[str]],
    *,
    bound: set[str],
    root: Path | None = None,
) -> tuple[str, list[str], dict[str, str]]:
    """The step's script, its arguments and its environment as Tekton hands them to the container."""
    values = tekton_values(task_obj, params, bound=bound, root=root)
    s = step(task_obj)
    env = {e["name"]: substitute(e["value"], values) for e in s.get("env", [])}
    return s["script"], step_argv(task_obj, arrays, values), env


def run_step(
    task_obj: Obj,
    params: dict[str, str],
    arrays: dict[str, list[str]],
    *,
    bound: set[str],
    tmp_path: Path,
    shell: str = "sh",
) -> tuple[list[str], dict[str, str]]:
    """Run the step's script as Tekton would; a fake `rollguard` records its argv and environment."""
    script_text, argv, env = rendered_step(task_obj, params, arrays, bound=bound)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    record = tmp_path / "argv.json"
    fake = bin_dir / "rollguard"
    fake.write_text(
        f"#!{shutil.which('python3') or 'python3'}\n"
        "import json, os, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'env': dict(os.environ)}}, open({str(record)!r}, 'w'))\n"
    )
    fake.chmod(0o755)
    script = tmp_path / "script.sh"
    script.write_text(script_text)
    proc = subprocess.run(
        [shell, str(script), *argv],
        env={**env, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "pwned").exists(), "an image string was executed by the shell"
    data = json.loads(record.read_text())
    return data["argv"], data["env"]


def taskrun_inputs(taskrun: Obj) -> tuple[dict[str, str], dict[str, list[str]], set[str]]:
    """(string params, array params, bound workspaces) of a TaskRun or a Pipeline's task entry."""
    spec = taskrun.get("spec", taskrun)
    params: dict[str, str] = {}
    arrays: dict[str, list[str]] = {}
    for p in spec.get("params", []):
        if isinstance(p["value"], list):
            arrays[p["name"]] = [str(v) for v in p["value"]]
        else:
            params[p["name"]] = str(p["value"])
    return params, arrays, {w["name"] for w in spec.get("workspaces", [])}


# -- parameter and result tables for docs/tekton.md ---------------------------------------------------


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def params_table(task_obj: Obj) -> str:
    rows = ["| Param | Type | Default | Description |", "|---|---|---|---|"]
    for p in task_obj["spec"]["params"]:
        if "default" not in p:
            default = "(required)"
        elif p["default"] == [] or p["default"] == "":
            default = "`[]`" if p.get("type") == "array" else '`""`'
        else:
            default = f"`{p['default']}`"
        rows.append(f"| `{p['name']}` | {p.get('type', 'string')} | {default} | {_cell(p['description'])} |")
    return "\n".join(rows)


def results_table(task_obj: Obj) -> str:
    rows = ["| Result | Description |", "|---|---|"]
    rows += [f"| `{r['name']}` | {_cell(r['description'])} |" for r in task_obj["spec"]["results"]]
    return "\n".join(rows)


def workspaces_table(task_obj: Obj) -> str:
    rows = ["| Workspace | Optional | Description |", "|---|---|---|"]
    rows += [
        f"| `{w['name']}` | {'yes' if w.get('optional') else 'no'} | {_cell(w['description'])} |"
        for w in task_obj["spec"]["workspaces"]
    ]
    return "\n".join(rows)


GENERATED = {"params": params_table, "results": results_table, "workspaces": workspaces_table}


def generated_block(name: str, text: str) -> str | None:
    """The content between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``."""
    m = re.search(rf"<!-- generated:{name} -->\n(.*?)\n<!-- /generated:{name} -->", text, re.S)
    return m.group(1) if m else None


def regenerate(doc: Path) -> None:
    text = doc.read_text()
    task_obj = task()
    for name, make in GENERATED.items():
        table = make(task_obj)
        pattern = rf"(<!-- generated:{name} -->\n).*?(\n<!-- /generated:{name} -->)"
        text = re.sub(pattern, lambda m, table=table: m.group(1) + table + m.group(2), text, flags=re.S)
    doc.write_text(text)


# -- the Containerfile ----------------------------------------------------------------------------------


def containerfile_instructions(text: str | None = None) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = CONTAINERFILE.read_text() if text is None else text
    logical, current = [], ""
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        logical.append(current + line)
        current = ""
    out = []
    for line in logical:
        word, _, rest = line.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def stages(text: str | None = None) -> list[list[tuple[str, str]]]:
    """The Containerfile's instructions split into build stages (each starts with FROM)."""
    result: list[list[tuple[str, str]]] = []
    for instruction in containerfile_instructions(text):
        if instruction[0] == "FROM":
            result.append([])
        if result:
            result[-1].append(instruction)
    return result


def run_command(args: str) -> list[str]:
    """A RUN instruction's shell command as argv, with its --mount=... options dropped."""
    words = shlex.split(args)
    while words and words[0].startswith("--"):
        words.pop(0)
    return words


def pip_commands(stage: list[tuple[str, str]], verb: str) -> list[list[str]]:
    """Every ``python -m pip VERB ...`` a stage runs, as argv."""
    found = []
    for instruction, args in stage:
        if instruction == "RUN":
            argv = run_command(args)
            if argv[:4] == ["python", "-m", "pip", verb]:
                found.append(argv)
    return found


def _ignore_regex(pattern: str) -> re.Pattern[str]:
    """A .containerignore pattern as a regex: ``*`` and ``?`` stay within one path segment, ``**``
    spans any number of them."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:[^/]+/)*", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def ignored(relative: str, patterns: list[str]) -> bool:
    """Whether a context path is left out by .containerignore patterns: a pattern matches the path or
    any of its parent directories; the last matching pattern wins; ``!`` takes a path back in."""
    parts = relative.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    verdict = False
    for raw in patterns:
        negate = raw.startswith("!")
        regex = _ignore_regex((raw[1:] if negate else raw).strip("/"))
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            verdict = not negate
    return verdict


def ignore_patterns() -> list[str]:
    return [
        line.strip()
        for line in CONTAINERIGNORE.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


# -- shared by the tests of this folder ------------------------------------------------------------


def run_task(task_obj: Obj, kubeconfig: Path, tmp_path: Path, params: dict[str, str],
             images: list[str]) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:  # fmt: skip
    """The step as the container runs it: its script under sh, Tekton's values, this checkout's rollguard
    on PATH, the sandbox's kubeconfig in the `kubeconfig-dir` workspace; returns the results too."""
    bound = {"kubeconfig-dir", "report"}
    script, argv, env = rendered_step(task_obj, params, {"images": images}, bound=bound, root=tmp_path)
    for name in bound:
        (tmp_path / "workspace" / name).mkdir(parents=True)
    shutil.copy(kubeconfig, tmp_path / "workspace" / "kubeconfig-dir" / "kubeconfig")
    results = tmp_path / "tekton" / "results"
    results.mkdir(parents=True)
    (tmp_path / "script.sh").write_text(script)
    env = {**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp_path),
           "TMPDIR": str(tmp_path)}  # fmt: skip
    proc = subprocess.run(
        ["sh", str(tmp_path / "script.sh"), *argv], env=env, capture_output=True, text=True, timeout=300
    )
    return proc, {p.name: p.read_text() for p in results.iterdir()}


def is_our_task(ref: Obj) -> bool:
    """A reference to rollguard-rollout: by name, or by the git resolver at tekton/task-rollout.yaml."""
    params = {p["name"]: p["value"] for p in ref.get("params", [])}
    return ref.get("name") == "rollguard-rollout" or params.get("pathInRepo") == "tekton/task-rollout.yaml"


def parse_lock(text: str) -> dict[str, tuple[str, list[str], set[str]]]:
    """name -> (version, hashes, what it is required via) of a pip-compile --generate-hashes file."""
    entries: dict[str, tuple[str, list[str], set[str]]] = {}
    current = ""
    in_via = False
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)", line)
        if m:
            current = str(canonicalize_name(m[1]))
            entries[current] = (m[2], [], set())
            in_via = False
            continue
        if not current:
            continue
        h = re.match(r"^\s+--hash=sha256:([0-9a-f]{64})", line)
        if h:
            entries[current][1].append(h[1])
        elif re.match(r"^\s+# via\s*$", line):
            in_via = True
        elif (v := re.match(r"^\s+#\s+via (.+)$", line)) or (
            in_via and (v := re.match(r"^\s+#\s+(\S.*)$", line))
        ):
            entries[current][2].add(v[1].strip())
    return entries


if __name__ == "__main__":
    for arg in sys.argv[1:] or [str(TEKTON_DOC)]:
        regenerate(Path(arg))
