"""The container image's recipe, proven without a container engine: the wheel builds from the build
context the Containerfile sees, installs into a clean virtualenv with the very pip command the
Containerfile runs, and `rollguard` works from that virtualenv alone, also as an arbitrary UID in group 0
(what OpenShift's restricted SCC gives a pod)."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import rollguard
from tests.tekton.manifests import (
    CONTAINERFILE,
    ROOT,
    containerfile_instructions,
    ignore_patterns,
    ignored,
    pip_commands,
    run_command,
    stages,
)

PIP_INSTALL = ["python", "-m", "pip", "install"]

ARBITRARY_UID = 1000770000  # from an OpenShift namespace's UID range; no passwd entry anywhere
UNREACHABLE_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


def env_of(stage: list[tuple[str, str]], *, until: int | None = None) -> dict[str, str]:
    """The ENV a stage sets (before instruction ``until``); only the KEY=VALUE form is used here."""
    env: dict[str, str] = {}
    for instruction, args in stage[:until]:
        if instruction == "ENV":
            for key, value in re.findall(r"(\w+)=(\"[^\"]*\"|\S+)", args):
                env[key] = value.strip('"')
    return env


# -- the recipe itself ------------------------------------------------------------------------------


def test_containerfile_recipe() -> None:
    build, runtime = stages()
    python = next(a for i, a in containerfile_instructions() if i == "ARG" and a.startswith("PYTHON="))
    assert python == f"PYTHON=python{sys.version_info[0]}.{sys.version_info[1]}", (
        "the packaging test stands in for the image only with the same Python as its base"
    )
    assert build[0] == ("FROM", "${BASE_IMAGE} AS build") and runtime[0] == ("FROM", "${BASE_IMAGE}")
    assert len(pip_commands(build, "wheel")) == 1 and len(pip_commands(runtime, "install")) == 2
    assert len(pip_commands(build, "install")) == 1
    users = [args for instruction, args in runtime if instruction == "USER"]
    assert users[-1] == "1001", "the image must end on a numeric non-root USER (runAsNonRoot checks it)"
    entry = [args for instruction, args in runtime if instruction == "ENTRYPOINT"]
    assert entry == ['["rollguard"]']
    env = env_of(runtime)
    assert env["HOME"] and env["TMPDIR"] and env.get("LOGNAME")
    recipe = CONTAINERFILE.read_text()
    assert f"chgrp -R 0 {env['HOME']}" in recipe and f"chmod -R g=u {env['HOME']}" in recipe


def test_containerignore_keeps_the_context_to_the_sources() -> None:
    patterns = ignore_patterns()
    for kept in ("pyproject.toml", "requirements.lock", "LICENSE", "task/cli.py", "tui"):
        assert not ignored(kept, patterns), kept
    for dropped in (".git/HEAD", ".venv/bin/python", ".sandbox/default/kubeconfig", "tests/conftest.py",
                    "sandbox/cluster.py", "tests/helpers/fakecluster.py",
                    "task/__pycache__/cli.cpython-311.pyc", ".mypy_cache/x"):  # fmt: skip
        assert ignored(dropped, patterns), dropped


# -- the wheel, built and installed as the image build does it --------------------------------------


@dataclass
class Installed:
    venv: Path
    home: Path
    tmp: Path
    wheel: Path
    env: dict[str, str]  # the runtime stage's ENV with this venv's bin first on PATH

    def run(
        self, *args: str, uid: int | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        prefix = []
        if uid is not None:
            prefix = ["setpriv", f"--reuid={uid}", "--regid=0", "--clear-groups"]
        return subprocess.run(
            [*prefix, str(self.venv / "bin" / "rollguard"), *args],
            env=env if env is not None else self.env,
            cwd=self.home,
            capture_output=True,
            text=True,
            timeout=60,
        )


def copy_context(dest: Path) -> None:
    """The build context as the container engine sends it: the repository filtered by .containerignore."""
    patterns = ignore_patterns()
    negations = [p[1:].strip("/") for p in patterns if p.startswith("!")]
    for top, dirs, files in os.walk(ROOT):
        base = Path(top).relative_to(ROOT).as_posix()
        base = "" if base == "." else base + "/"
        # skip ignored directories no `!` pattern reaches into (.git, .venv, ...): walking them is slow
        dirs[:] = [
            d for d in dirs
            if not ignored(base + d, patterns)
            or any(n == base + d or n.startswith(base + d + "/") or "**" in n for n in negations)
        ]  # fmt: skip
        for name in files:
            if not ignored(base + name, patterns):
                target = dest / (base + name)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(Path(top) / name, target)


def pip_env() -> dict[str, str]:
    """This machine's pip settings (the image build would use PyPI's defaults)."""
    env = {k: v for k, v in os.environ.items() if k.startswith("PIP_") and k != "PIP_NO_CACHE_DIR"}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    env["HOME"] = str(Path.home())
    return env


def wheelhouse() -> Path:
    """Every wheel the build and the install need, downloaded once per lock file and build requirements.

    The pip commands stay exactly the Containerfile's; only where pip finds packages changes (like a
    cache): PIP_NO_INDEX and PIP_FIND_LINKS point it here, so a run costs no download after the first.
    The wheels come from requirements.lock and requirements-build.lock with their hashes, as the image
    build takes them.
    """
    lock = (ROOT / "requirements.lock").read_text()
    build_lock = (ROOT / "requirements-build.lock").read_text()
    key = hashlib.sha256(json.dumps([sys.version, build_lock, lock]).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("ROLLGUARD_CACHE") or Path.home() / ".cache" / "rollguard")
    house = cache / "wheelhouse" / key
    if not (house / ".complete").exists():
        cache.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=cache))
        download = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "-d", str(partial)]
        for name in ("requirements.lock", "requirements-build.lock"):
            args = ["--require-hashes", "--no-deps", "-r", str(ROOT / name)]
            proc = subprocess.run(
                [*download, *args], capture_output=True, text=True, env=pip_env(), timeout=300
            )
            assert proc.returncode == 0, proc.stderr[-3000:]
        (partial / ".complete").touch()
        house.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(partial, house)  # atomic: a concurrent session either sees all of it or none
        except OSError:  # another session finished first
            shutil.rmtree(partial, ignore_errors=True)
    return house


def offline_env(house: Path) -> dict[str, str]:
    return {**pip_env(), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(house)}


@pytest.fixture(scope="module")
def installed() -> Iterator[Installed]:
    build, runtime = stages()
    # A world-traversable place: the arbitrary-UID test must reach the venv (pytest's tmp dirs are 0700).
    root = Path(tempfile.mkdtemp(prefix="rollguard-image-"))
    root.chmod(0o755)
    try:
        context, dist = root / "src", root / "dist"
        copy_context(context)
        house = wheelhouse()
        # The build stage: its own venv, the build lock installed into it, then the wheel without isolation.
        build_venv = root / "build"
        subprocess.run([sys.executable, "-m", "venv", str(build_venv)], check=True, timeout=120)
        build_python = str(build_venv / "bin" / "python")
        paths = {"/tmp/dist": str(dist), "/tmp/src": str(context),
                 "/tmp/requirements-build.lock": str(context / "requirements-build.lock")}  # fmt: skip
        for cmd in [*pip_commands(build, "install"), *pip_commands(build, "wheel")]:
            cmd = [build_python, *(paths.get(a, a) for a in cmd[1:])]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=offline_env(house), timeout=120)
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        wheels = glob.glob(str(dist / "rollguard-*.whl"))
        assert len(wheels) == 1, wheels

        venv = root / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        installs = [
            i for i, (ins, a) in enumerate(runtime) if ins == "RUN" and run_command(a)[:4] == PIP_INSTALL
        ]
        stage_env = env_of(runtime, until=installs[0])
        stage_env.pop("PIP_NO_CACHE_DIR", None)
        stage_env.pop("PATH", None)
        for install_cmd in pip_commands(runtime, "install"):  # in the Containerfile's order
            install_cmd = [str(venv / "bin" / "python"), *install_cmd[1:]]
            install_cmd = [
                wheels[0] if a.startswith("/tmp/dist/") else str(context / "requirements.lock")
                if a == "/tmp/requirements.lock" else a
                for a in install_cmd
            ]  # fmt: skip
            proc = subprocess.run(
                install_cmd,
                capture_output=True,
                text=True,
                env={**offline_env(house), **stage_env},
                timeout=180,
            )
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

        home, tmp = root / "home", root / "tmp"
        for d in (home, tmp):  # as the image leaves HOME: group 0 owns it and may write it, others not
            d.mkdir()
            os.chown(d, os.getuid(), 0)
            d.chmod(0o770)
        env = {**env_of(runtime), "HOME": str(home), "TMPDIR": str(tmp)}
        env.pop("PIP_NO_CACHE_DIR", None)
        env["PATH"] = f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"
        yield Installed(venv=venv, home=home, tmp=tmp, wheel=Path(wheels[0]), env=env)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_the_image_build_stops_on_a_version_that_is_not_the_packages(installed: Installed) -> None:
    """The recipe's version check, run verbatim in the virtualenv its pip commands installed: the build
    arg VERSION (every version label) passes as rollguard.__version__ and stops the build otherwise."""
    _, runtime = stages()
    (check,) = [args for instruction, args in runtime if instruction == "RUN" and "${VERSION}" in args]
    version = rollguard.__version__  # the one place the version is written
    for given, ok in ((version, True), (version + ".1", False), ("", False)):
        proc = subprocess.run(["sh", "-c", check], env={**installed.env, "VERSION": given}, cwd=installed.home,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert (proc.returncode == 0) is ok, (given, proc.stderr)
        assert ok or f"pass --build-arg VERSION={version}" in proc.stderr


@pytest.mark.slow
def test_rollguard_runs_from_the_clean_venv_alone(installed: Installed) -> None:
    version = rollguard.__version__  # the one place the version is written
    help_ = installed.run("--help")
    assert help_.returncode == 0, help_.stderr
    assert "rollout" in help_.stdout
    assert installed.run("rollout", "--help").returncode == 0
    assert installed.run("--version").stdout.strip() == f"rollguard {version}"
    where = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", "import rollguard, rollguard.tui, kubernetes, yaml; print(rollguard.__file__)"],
        env=installed.env, cwd=installed.home, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert where.returncode == 0, where.stderr
    assert where.stdout.strip().startswith(str(installed.venv)), (
        "rollguard must come from the venv, not the checkout"
    )


@pytest.mark.slow
def test_every_installed_module_has_its_bytecode(installed: Installed) -> None:
    """The image runs with PYTHONDONTWRITEBYTECODE=1 (the Task on a read-only root): a module without the
    bytecode its install wrote would be compiled from source at every start of every command."""
    site = next((installed.venv / "lib").glob("python3*/site-packages"))
    uninstalled = {"pip", "setuptools", "pkg_resources", "_distutils_hack"}  # the image removes its installer
    sources = [p for p in site.rglob("*.py") if p.relative_to(site).parts[0] not in uninstalled]
    assert any(p.relative_to(site).parts[0] == "rollguard" for p in sources)
    probe = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c",
         "import importlib.util, json, os, sys\n"
         "paths = json.load(sys.stdin)\n"
         "print(json.dumps([p for p in paths if not os.path.exists(importlib.util.cache_from_source(p))]))"],
        input=json.dumps([str(p) for p in sources]), env=installed.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    missing = json.loads(probe.stdout)
    assert not missing, f"{len(missing)} of {len(sources)} modules have no bytecode, e.g. {missing[:5]}"


@pytest.mark.slow
def test_the_wheel_installs_one_import_name_and_no_test_equipment(installed: Installed) -> None:
    """Every module of task/ and tui/ is in the wheel, as `rollguard` and `rollguard.tui`; nothing else is."""
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = [n for n in wheel.namelist() if not n.startswith("rollguard-")]  # less the .dist-info
    assert {n.split("/")[0] for n in names} == {"rollguard"}, names
    expected = {f"rollguard/{p.relative_to(ROOT / 'task').as_posix()}" for p in (ROOT / "task").rglob("*.py")}
    expected |= {
        f"rollguard/tui/{p.relative_to(ROOT / 'tui').as_posix()}" for p in (ROOT / "tui").rglob("*.py")
    }
    expected.add("rollguard/tui/styles.tcss")
    assert set(names) == expected
    assert not any("fake" in n or "fixtures" in n or "sandbox" in n for n in names)


@pytest.mark.slow
def test_both_entry_points_answer_help(installed: Installed) -> None:
    assert installed.run("--help").returncode == 0
    tui = installed.run("tui", "--help")
    assert tui.returncode == 0 and "--read-only" in tui.stdout, tui.stderr


def unreachable_rollout(installed: Installed, **kwargs: object) -> subprocess.CompletedProcess[str]:
    kubeconfig = installed.home / "kubeconfig"
    kubeconfig.write_text(UNREACHABLE_KUBECONFIG)
    kubeconfig.chmod(0o664)
    os.chown(kubeconfig, os.getuid(), 0)
    return installed.run(
        "rollout", "-n", "shop-dev", "-l", "app=shop", "--image", "dc/api=reg.local/api:2",
        "--kubeconfig", str(kubeconfig), "--timeout", "1m", **kwargs,  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.mark.slow
def test_rollout_gets_to_the_cluster_from_the_clean_venv(installed: Installed) -> None:
    """Loads the kubernetes client, builds the run, and refuses cleanly: nothing else is missing."""
    result = unreachable_rollout(installed)
    assert result.returncode == 2, result.stderr
    assert "cannot reach the API server" in result.stderr and "Traceback" not in result.stderr


needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="switching to an arbitrary UID needs root and setpriv",
)


@needs_root
@pytest.mark.slow
def test_runs_as_an_arbitrary_uid_in_group_zero(installed: Installed) -> None:
    """OpenShift's UID: no passwd entry, group 0. HOME and TMPDIR are writable through the group only."""
    result = unreachable_rollout(installed, uid=ARBITRARY_UID)
    assert result.returncode == 2, result.stderr
    assert "cannot reach the API server" in result.stderr and "Traceback" not in result.stderr
    probe = subprocess.run(
        ["setpriv", f"--reuid={ARBITRARY_UID}", "--regid=0", "--clear-groups", str(installed.venv / "bin" / "python"),
         "-c", "import os, tempfile; tempfile.mkstemp(); open(os.path.expanduser('~/x'), 'w').write('x')"],
        env=installed.env, cwd=installed.home, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr


@needs_root
@pytest.mark.slow
def test_arbitrary_uid_without_logname(installed: Installed) -> None:
    env = {k: v for k, v in installed.env.items() if k not in ("LOGNAME", "USER", "LNAME", "USERNAME")}
    result = unreachable_rollout(installed, uid=ARBITRARY_UID, env=env)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr


@pytest.mark.slow
def test_the_lock_holds_every_runtime_dependency(installed: Installed) -> None:
    """Installed from requirements.lock with --no-deps, nothing is missing or in conflict (pip check)."""
    proc = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-m", "pip", "check"],
        env=installed.env, cwd=installed.home, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
