"""The image recipe, read the way a container engine and its users read it (no engine needed):

- the runtime stage is lean (UBI 9 minimal plus python3.11, no s2i builder: no compilers, httpd,
  EXPOSE or s2i labels) and its base is pinned by tag and digest in the recipe's default;
- every build arg a label uses is declared inside the stage (an ARG before the first FROM is not
  visible in a stage that does not declare it again), and `make image` and tekton/build-image.yaml pass
  VERSION, REVISION and CREATED, so no label is left empty or `unknown`;
- the licence label, pyproject.toml and the LICENSE file say the same;
- requirements.lock matches pyproject.toml (offline: names, versions, hashes, nothing stray), and the
  image installs exactly it, with --require-hashes, as wheels.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import rollguard
from tests.tekton.manifests import (
    ROOT,
    TEKTON,
    containerfile_instructions,
    load_one,
    parse_lock,
    references,
    run_command,
    stages,
)

BUILD_ARGS = ("VERSION", "REVISION", "CREATED")
# What a corporate cluster needs to reach PyPI, the UBI repositories and the Red Hat registry through its
# own proxy and mirrors; tekton/build-image.yaml passes each one from a param of its own.
MIRROR_ARGS = (
    "BASE_IMAGE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "PIP_INDEX_URL",
    "PIP_TRUSTED_HOST",
    "UBI_MIRROR",
)
PREDEFINED_ARGS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")  # the engines' own: usable without an ARG
LOCK = ROOT / "requirements.lock"
BUILD_LOCK = ROOT / "requirements-build.lock"
BUILD_PIPELINE = TEKTON / "build-image.yaml"
ARG_USE = re.compile(r"\$\{?(\w+)\}?")


def labels(stage: list[tuple[str, str]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for instruction, args in stage:
        if instruction == "LABEL":
            found.update(re.findall(r'([\w.\-/]+)="([^"]*)"', args))
    return found


def args_declared(stage: list[tuple[str, str]]) -> dict[str, str | None]:
    """ARG NAME[=default] declared in a stage, name -> default (None when it has none)."""
    found: dict[str, str | None] = {}
    for instruction, args in stage:
        if instruction == "ARG":
            name, eq, default = args.partition("=")
            found[name.strip()] = default.strip().strip('"') if eq else None
    return found


def global_args() -> dict[str, str | None]:
    """ARGs before the first FROM: usable in FROM lines, and in a stage only where re-declared."""
    head = []
    for instruction in containerfile_instructions():
        if instruction[0] == "FROM":
            break
        head.append(instruction)
    return args_declared(head)


def resolved_name(pipeline_task: dict[str, object]) -> str | None:
    """The Task a pipeline task takes from the cluster resolver (`name` param), if any."""
    ref = pipeline_task.get("taskRef") or {}
    assert isinstance(ref, dict)
    return next((p["value"] for p in ref.get("params", []) if p["name"] == "name"), None)


def make_build_args() -> dict[str, str]:
    """The --build-arg values `make image` passes (the recipe printed by make -n, run nothing)."""
    proc = subprocess.run(["make", "-s", "-n", "image"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return dict(re.findall(r"--build-arg (\w+)=(\S+)", proc.stdout))


# -- the base and the runtime stage ----------------------------------------------------------------


def test_the_base_is_ubi9_minimal_pinned_by_tag_and_digest() -> None:
    base = global_args()["BASE_IMAGE"]
    assert base and re.fullmatch(
        r"registry\.access\.redhat\.com/ubi9/ubi-minimal:9\.\d+-\d+@sha256:[0-9a-f]{64}", base
    ), f"the base must be UBI 9 minimal, pinned by tag and digest: {base}"
    assert len(set(base.rpartition(":")[2])) > 4, "a placeholder digest"
    assert re.fullmatch(r"python3\.\d+", global_args()["PYTHON"] or "")


def test_the_runtime_stage_is_lean() -> None:
    runtime = stages()[-1]
    words = [instruction for instruction, _ in runtime]
    assert "EXPOSE" not in words, "rollguard serves nothing"
    installs = [run_command(a) for i, a in runtime if i == "RUN" and "microdnf" in a]
    packages = {
        w for argv in installs for w in argv if not w.startswith("-") and w not in ("microdnf", "install")
    }
    assert not packages & {"gcc", "gcc-c++", "make", "httpd", "python3.11-devel", "git"}, packages
    assert not any(k.startswith(("io.openshift.s2i", "io.s2i")) or k == "usage" for k in labels(runtime))
    assert not any(i in ("COPY", "ADD") for i, _ in runtime), (
        "the runtime takes the wheel by a bind mount only"
    )
    # The labels a UBI base sets that would describe Red Hat's build, not this image, are all replaced.
    for key in ("name", "version", "vendor", "url", "vcs-ref", "build-date", "com.redhat.component",
                "summary", "description", "io.k8s.description", "io.k8s.display-name"):  # fmt: skip
        assert key in labels(runtime), key


# -- labels and build args ----------------------------------------------------------------------------


def test_every_label_is_filled_from_a_declared_build_arg() -> None:
    runtime = stages()[-1]
    declared = args_declared(runtime)
    globals_ = global_args()
    given = make_build_args()
    assert set(BUILD_ARGS) <= set(given), f"make image passes {sorted(given)}"
    assert given["REVISION"] != "unknown" and re.fullmatch(r"[0-9a-f]{40}", given["REVISION"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", given["CREATED"]), given["CREATED"]
    version = rollguard.__version__  # the one place the version is written
    assert given["VERSION"] == version
    for key, value in labels(runtime).items():
        for name in ARG_USE.findall(value):
            assert name in declared, (
                f"label {key} uses ${{{name}}}, not declared after FROM: it would be empty"
            )
        filled = ARG_USE.sub(
            lambda m: given.get(m[1]) or declared.get(m[1]) or globals_.get(m[1]) or "", value
        )  # what the engine substitutes: the build arg, else the stage's default, else the global one
        assert filled.strip() and "unknown" not in filled, f"label {key} would be {filled!r}"
    assert labels(runtime)["org.opencontainers.image.base.name"] == "${BASE_IMAGE}"


def test_every_build_takes_the_version_from_the_package(tmp_path: Path) -> None:
    """VERSION is written once (rollguard.__version__): the recipe has no default of its own, and
    `make image`, tekton/build-image.yaml's labels step and the release workflow each read it from
    task/__init__.py with their own commands, run here on this checkout."""
    version = rollguard.__version__
    runtime = stages()[-1]
    assert args_declared(runtime)["VERSION"] is None, "a default would be a second place for the version"
    assert make_build_args()["VERSION"] == version
    tasks = {t["name"]: t for t in load_one(BUILD_PIPELINE)["spec"]["tasks"]}
    (script,) = [s["script"] for s in tasks["labels"]["taskSpec"]["steps"]]
    results = {"VERSION_RESULT": tmp_path / "version", "CREATED_RESULT": tmp_path / "created"}
    env = {
        "PATH": "/usr/bin:/bin",
        "SOURCE": str(ROOT),
        "COMMITTER_DATE": "0",
        **{k: str(v) for k, v in results.items()},
    }
    proc = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert results["VERSION_RESULT"].read_text() == version
    release = (ROOT / ".github" / "workflows" / "release.yaml").read_text()
    reads = [line.strip() for line in release.splitlines() if line.strip().startswith("version=")]
    assert len(reads) == 2, reads  # the per-platform builds, and the index tagged with the version
    for read in reads:
        proc = subprocess.run(
            ["bash", "-c", f'{read}; printf %s "$version"'],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert proc.stdout == version, (read, proc.stderr)


def test_the_in_cluster_build_passes_the_same_build_args() -> None:
    pipeline = load_one(BUILD_PIPELINE)
    assert pipeline["apiVersion"] == "tekton.dev/v1" and pipeline["kind"] == "Pipeline"
    tasks = {t["name"]: t for t in pipeline["spec"]["tasks"]}
    build = next(t for t in tasks.values() if resolved_name(t) == "buildah")
    assert resolved_name(tasks["fetch"]) == "git-clone"
    params = {p["name"]: p["value"] for p in build["params"]}
    assert params["DOCKERFILE"].endswith("Containerfile")
    passed = dict(a.split("=", 1) for a in params["BUILD_ARGS"])
    assert set(passed) == {*BUILD_ARGS, *MIRROR_ARGS}
    assert passed["REVISION"] == "$(tasks.fetch.results.COMMIT)"
    declared = {p["name"]: p for p in pipeline["spec"]["params"]}
    for name in MIRROR_ARGS:  # each from a param of its own: $(params.http-proxy) for HTTP_PROXY
        assert passed[name] == f"$(params.{name.lower().replace('_', '-')})", name
        assert name.lower().replace("_", "-") in declared, name
    assert declared["base-image"]["default"] == global_args()["BASE_IMAGE"], "the same pinned base"
    fetch = {p["name"]: p["value"] for p in tasks["fetch"]["params"]}
    for name in PREDEFINED_ARGS:  # the clone goes through the same proxy
        assert fetch[name] == f"$(params.{name.lower().replace('_', '-')})", name
    assert params["IMAGE"].startswith(
        "image-registry.openshift-image-registry.svc:5000/$(context.pipelineRun.namespace)/rollguard:"
    )
    for kind, rest in references(pipeline["spec"]["tasks"]):
        if kind == "tasks":
            assert rest.split(".")[0] in tasks, rest
    labels_task = tasks["labels"]
    for s in labels_task["taskSpec"]["steps"]:
        assert not references(s["script"]), "values reach the script through env, never pasted in"


def test_the_licence_is_one_everywhere() -> None:
    licence = labels(stages()[-1])["org.opencontainers.image.licenses"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert licence == project["license"] == "Apache-2.0", "the SPDX string form (PEP 639), not a table"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text and len(text) > 10_000


# -- the lock --------------------------------------------------------------------------------------


def test_the_lock_matches_pyproject() -> None:
    text = LOCK.read_text()
    assert "make lock" in text, "the lock says how to regenerate it"
    python = global_args()["PYTHON"] or ""
    assert f"with Python {python.removeprefix('python')}" in text, "locked for the image's Python"
    entries = parse_lock(text)
    assert entries
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    direct = {str(canonicalize_name(Requirement(d).name)): Requirement(d) for d in project["dependencies"]}
    for name, requirement in direct.items():
        assert name in entries, f"{name} is in pyproject.toml but not in the lock: run make lock"
        version = entries[name][0]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{name}=={version} does not satisfy {requirement}: run make lock"
        )
    via_project = {n for n, (_, _, via) in entries.items() if "rollguard (pyproject.toml)" in via}
    assert via_project == set(direct), (
        f"the lock's direct dependencies differ from pyproject.toml: {via_project ^ set(direct)}"
    )
    for name, (version, hashes, via) in entries.items():
        assert hashes, f"{name}=={version} has no hash"
        others = {str(canonicalize_name(v)) for v in via if v != "rollguard (pyproject.toml)"}
        assert via and others <= set(entries), (
            f"{name} is required via {via}, not all in the lock (stale entry?)"
        )


def test_the_image_installs_exactly_the_lock() -> None:
    runtime = stages()[-1]
    installs = [run_command(a) for i, a in runtime if i == "RUN" and "pip install" in a]
    lock_install = next(argv for argv in installs if "-r" in argv)
    assert {"--require-hashes", "--no-deps", "--only-binary=:all:"} <= set(lock_install)
    assert lock_install[lock_install.index("-r") + 1] == "/tmp/requirements.lock"
    mounts = [a for i, a in runtime if i == "RUN" and "requirements.lock" in a]
    assert any("source=requirements.lock" in a for a in mounts)
    wheel_install = next(argv for argv in installs if argv is not lock_install)
    assert "--no-deps" in wheel_install, "the wheel must not pull anything the lock does not pin"


@pytest.mark.parametrize("broken", ["drop-dependency", "bump-outside-range", "no-hashes"])
def test_the_lock_check_catches_a_mismatch(
    broken: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check above can fail: a lock that lost a dependency, pins outside pyproject's range, or has no hashes."""
    text = LOCK.read_text()
    if broken == "drop-dependency":
        text = re.sub(r"(?ms)^kubernetes==.*?(?=^\S)", "", text)
    elif broken == "bump-outside-range":
        text = re.sub(r"(?m)^kubernetes==\S+", "kubernetes==99.0.0", text)
    else:
        text = re.sub(r"(?m)^\s+--hash=sha256:[0-9a-f]{64}.*\n", "", text)
    fake = tmp_path / "requirements.lock"
    fake.write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "LOCK", fake)
    with pytest.raises(AssertionError):
        test_the_lock_matches_pyproject()


# -- what the build reaches, and the build stage's own tools ------------------------------------------


def test_the_git_source_is_required_and_invented_nowhere() -> None:
    """No default Git URL or revision: a default would point every cluster at a host it may not reach."""
    params = {p["name"]: p for p in load_one(BUILD_PIPELINE)["spec"]["params"]}
    for name in ("git-url", "git-revision"):
        assert "default" not in params[name], f"{name} must be required"
    assert "github.com" not in BUILD_PIPELINE.read_text()


def test_every_stage_takes_the_mirror_args() -> None:
    """Each stage that runs pip or microdnf declares the mirror args without a default (unset unless given,
    so pip and microdnf keep their own), and the UBI mirror rewrites the repo file microdnf reads."""
    for stage in stages():
        runs = " ".join(a for i, a in stage if i == "RUN")
        declared = args_declared(stage)
        if "pip " in runs:
            for name in ("PIP_INDEX_URL", "PIP_TRUSTED_HOST"):
                assert name in declared and declared[name] is None, f"{stage[0]}: ARG {name}"
        if "microdnf" in runs:
            assert "UBI_MIRROR" in declared and declared["UBI_MIRROR"] is None
            assert "s|https://cdn-ubi.redhat.com/content/public/ubi|${UBI_MIRROR%/}|" in runs
            assert "/etc/yum.repos.d/ubi.repo" in runs
    runtime = stages()[-1]
    assert not any(i == "ENV" and ("PIP_INDEX_URL" in a or "PROXY" in a) for i, a in runtime), (
        "kept out of the image"
    )
    assert all(name in global_args() or name in PREDEFINED_ARGS or any(name in args_declared(s) for s in stages())
               for name in MIRROR_ARGS)  # fmt: skip


def test_the_build_stage_pins_its_tools_with_hashes() -> None:
    """The wheel is built with setuptools from requirements-build.lock (hashes, wheels only) and without
    build isolation, so pip downloads no unpinned build tool; the pin satisfies build-system.requires."""
    build = stages()[0]
    installs = [run_command(a) for i, a in build if i == "RUN" and "pip install" in a]
    (install,) = installs
    assert {"--require-hashes", "--no-deps", "--only-binary=:all:"} <= set(install)
    assert install[install.index("-r") + 1] == "/tmp/requirements-build.lock"
    assert any("source=requirements-build.lock" in a for i, a in build if i == "RUN")
    (wheel,) = [run_command(a) for i, a in build if i == "RUN" and "pip wheel" in a]
    assert {"--no-build-isolation", "--no-deps", "--no-index"} <= set(wheel)
    entries = parse_lock(BUILD_LOCK.read_text())
    assert "make lock" in BUILD_LOCK.read_text()
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    for requirement in map(Requirement, requires):
        name = str(canonicalize_name(requirement.name))
        assert name in entries, (
            f"{name} is in build-system.requires but not in {BUILD_LOCK.name}: run make lock"
        )
        assert requirement.specifier.contains(entries[name][0]), (
            f"{name}=={entries[name][0]} does not satisfy {requirement}"
        )
    for name, (version, hashes, _) in entries.items():
        assert hashes, f"{name}=={version} has no hash"


def test_setuptools_admitted_by_build_system_understands_the_licence() -> None:
    """The SPDX `license` string and `license-files` need setuptools 77 (PEP 639); an older one admitted by
    build-system.requires would reject them or warn."""
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    (setuptools,) = [Requirement(r) for r in requires if Requirement(r).name == "setuptools"]
    assert not setuptools.specifier.contains("76.9"), f"{setuptools} admits a setuptools before 77"
    assert not any(Requirement(r).name == "wheel" for r in requires), (
        "setuptools builds wheels itself since 70.1"
    )
