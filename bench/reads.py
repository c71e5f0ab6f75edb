"""Cases 4 and 5: reads at scale (status, drift-check, the TUI's first screen) and process start-up."""

from __future__ import annotations

import importlib.util
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.context import REPO, CliRun, Ctx
from bench.counted import requests_span, split
from bench.metrics import Stats, bytecode_env, python_module, run

SCALE = (300, 1000)
SCALE_NAMESPACES = 10
PREFIX = "bench-scale-"
READ_REPS = 3
TUI_REPS = 3
TUI_TIMEOUT = 90.0
STARTUP_REPS = 5
IMPORT_REPS = 3
# what `python -m bench.tui_bench` measures, as JSON on its last line (its printout stays for the doc)
_TUI = (
    "import json\nfrom bench.tui_bench import main\nr = main()\n"
    "print(json.dumps(r if isinstance(r, dict) else {}, default=str))"
)


@dataclass
class ReadRow:
    command: str
    workloads: int
    wall: Stats = field(default_factory=Stats)
    runs: list[CliRun] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class ReadResults:
    rows: list[ReadRow] = field(default_factory=list)
    created: dict[int, float] = field(default_factory=dict)  # workloads -> seconds to create and settle
    tui_first: Stats = field(default_factory=Stats)
    tui_key: Stats = field(default_factory=Stats)
    tui_output: str = ""
    tui_missing: str = ""
    startup: dict[str, Stats] = field(default_factory=dict)
    first_request: dict[str, Stats] = field(default_factory=dict)  # command -> until its first request
    # command -> from its first request until the last answer came (its requests go out in parallel)
    requests: dict[str, Stats] = field(default_factory=dict)
    rest: dict[str, Stats] = field(default_factory=dict)  # command -> after the last answer: assessing, exit
    # `python -c pass` and `python -S -c pass` with the same interpreter and environment: what any Python
    # program pays before its first line (the second without site, i.e. without the .pth files of the
    # environment, this tree's editable install among them)
    interpreter: Stats = field(default_factory=Stats)
    bare_interpreter: Stats = field(default_factory=Stats)
    imports: dict[str, list[tuple[str, float]]] = field(default_factory=dict)  # command -> (module, ms)
    import_seconds: dict[str, float] = field(default_factory=dict)  # command -> time of its importtime run
    # `kubectl get deploy,rc,dc -n NS`, each run right after one of `rollguard status -n NS` (paired)
    kubectl: Stats = field(default_factory=Stats)
    pair_ratios: list[float] = field(default_factory=list)  # each pair's rollguard / kubectl
    paired: str = ""  # the rollguard command it was paired with
    problems: list[str] = field(default_factory=list)


def read_commands() -> list[tuple[str, list[str], bool]]:
    """(label, rollguard arguments, has --report) of each read measured."""
    namespaces = [arg for i in range(SCALE_NAMESPACES) for arg in ("-n", f"{PREFIX}{i}")]
    return [
        ("status -A -l bench=scale", ["status", "-A", "-l", "bench=scale"], False),
        ("drift-check -A -l bench=scale", ["drift-check", "-A", "-l", "bench=scale"], True),
        (f"drift-check -n NS x{SCALE_NAMESPACES}", ["drift-check", *namespaces], True),
    ]


def scale_reads(ctx: Ctx, res: ReadResults, sizes: tuple[int, ...] = SCALE, *, tui: bool = True) -> None:
    """Grow the scale namespaces to each size in turn and time every read on them."""
    have = 0
    for size in sizes:
        p = ctx.drive(
            "scale", "--prefix", PREFIX, "--namespaces", str(SCALE_NAMESPACES), "--start", str(have),
            "--workloads", str(size - have), "--image", f"{REPO}:v0", timeout=900,
        )  # fmt: skip
        data = p.json() or {}
        res.created[size] = p.seconds
        if not data.get("ok"):
            res.problems.append(f"creating {size} workloads: {data.get('error') or data or p.tail()}")
        have = size
        for label, args, report in read_commands():
            row = ReadRow(label, size)
            res.rows.append(row)
            for _ in ctx.reps(READ_REPS, 0.95):
                r = ctx.rollguard(args, report=report, timeout=300)
                if r.proc.code in (0, 1):  # drift-check exits 1 when it finds something: still a full read
                    row.wall.add(r.seconds)
                    row.runs.append(r)
                else:
                    row.problems.append(f"exit {r.proc.code}: {r.proc.tail()}")
            ctx.log(f"{label} over {size}: {row.wall.fmt()}")
    if tui:  # last: it brings its own 300 workloads (fixture data), and its repetitions are the most optional
        tui_first_screen(ctx, res)


def tui_first_screen(ctx: Ctx, res: ReadResults) -> None:
    """bench/tui_bench.py (the TUI's own benchmark, on fixture data of 300 workloads), if it is there."""
    if importlib.util.find_spec("bench.tui_bench") is None:
        res.tui_missing = "bench/tui_bench.py is not in the tree yet (the TUI is still being written)"
        return
    for _ in ctx.reps(TUI_REPS, 0.95):
        p = run([sys.executable, "-c", _TUI], timeout=TUI_TIMEOUT)
        data = p.json() or {}
        if p.timed_out:
            res.tui_missing = (
                f"bench/tui_bench.py did not finish within {TUI_TIMEOUT:.0f} s in this tree (the TUI is still "
                "being changed); re-run `make bench` once it does"
            )
            break
        if p.code != 0 or "first_screen_s" not in data:
            res.tui_missing = f"bench/tui_bench.py failed: {p.tail(3)}"
            break
        res.tui_first.add(float(data["first_screen_s"]))
        downs = [float(x) for x in data.get("down", [])]
        if downs:
            res.tui_key.add(sorted(downs)[len(downs) // 2])
        res.tui_output = "\n".join(p.stdout.rstrip().splitlines()[:-1])
    ctx.log(f"TUI first screen: {res.tui_first.fmt()}")


def rollguard_argv() -> list[str]:
    """The installed `rollguard` script (what users start), else the module."""
    script = Path(sys.executable).with_name("rollguard")
    return [str(script)] if script.exists() else python_module("rollguard.cli")


def startup(ctx: Ctx, res: ReadResults, namespace: str) -> None:
    """Process time of `rollguard --help` and `rollguard status` on a small namespace; where it goes."""
    commands = {
        "rollguard --help": ["--help"],
        f"rollguard status -n {namespace}": ["status", "-n", namespace, "--kubeconfig", ctx.kubeconfig],
    }
    installed = bytecode_env(ctx.tmp / "pycache")  # compiled, as pip installs the wheel
    for stats, flags in ((res.interpreter, []), (res.bare_interpreter, ["-S"])):
        for _ in range(STARTUP_REPS):
            p = run([sys.executable, *flags, "-c", "pass"], timeout=60, env=installed)
            if p.code == 0:
                stats.add(p.seconds)
    for label, args in commands.items():
        stats = res.startup.setdefault(label, Stats())
        run([*rollguard_argv(), *args], timeout=120, env=installed)  # writes the bytecode: not timed
        kubectl = kubectl_argv(namespace, ctx.kubeconfig) if "--kubeconfig" in args else None
        if kubectl is not None:
            run(kubectl, timeout=120)  # its discovery cache, as a user's second kubectl call has it
        for _ in range(STARTUP_REPS):
            p = run([*rollguard_argv(), *args], timeout=120, env=installed)
            if p.code == 0:
                stats.add(p.seconds)
            else:
                res.problems.append(f"{label}: exit {p.code}: {p.tail()}")
            if kubectl is not None:  # right after it, so that both meet the same load (a paired measurement)
                k = run(kubectl, timeout=120)
                if k.code == 0 and p.code == 0:
                    res.kubectl.add(k.seconds)
                    res.pair_ratios.append(p.seconds / k.seconds)
                elif k.code != 0:
                    res.problems.append(f"{' '.join(kubectl[:4])}: exit {k.code}: {k.tail()}")
        if "--kubeconfig" in args and kubectl is None:
            res.problems.append("kubectl: not on PATH, so `status` is not compared with `kubectl get`")
        if kubectl is not None:
            res.paired = label
        if "--kubeconfig" in args:  # the same command through bench.counted: when its first request goes out
            first = res.first_request.setdefault(label, Stats())
            asked, rest = res.requests.setdefault(label, Stats()), res.rest.setdefault(label, Stats())
            out = str(ctx.tmp / "startup-counts.json")
            for _ in range(STARTUP_REPS):
                t0 = time.monotonic()
                p = run(python_module("bench.counted", out, *args), timeout=120, env=installed)
                ended = time.monotonic()
                parts, span = split(out, t0, ended), requests_span(out)
                if p.code == 0 and parts is not None and span is not None:
                    first.add(parts.startup_s)
                    asked.add(span)
                    rest.add(ended - t0 - parts.startup_s - span)
        # -X importtime figures of one run jump by 2-4x on a busy machine: take the median of a few
        profiles = [
            run(
                python_module("rollguard.cli", *args),
                timeout=120,
                env={**installed, "PYTHONPROFILEIMPORTTIME": "1"},
            )
            for _ in range(IMPORT_REPS)
        ]
        per_module: dict[str, list[float]] = {}
        for p in profiles:
            for module, ms in top_imports(p.stderr, count=20):
                per_module.setdefault(module, []).append(ms)
        medians = {m: statistics.median(v + [0.0] * (IMPORT_REPS - len(v))) for m, v in per_module.items()}
        res.imports[label] = sorted(medians.items(), key=lambda item: -item[1])[:6]
        res.import_seconds[label] = statistics.median(p.seconds for p in profiles)
        ctx.log(f"{label}: {stats.fmt()}")


def kubectl_argv(namespace: str, kubeconfig: str) -> list[str] | None:
    """`kubectl get deploy,rc,dc -n NS`: what a user would type to see what `rollguard status` shows."""
    exe = shutil.which("kubectl")
    if exe is None:
        return None
    return [exe, "get", "deploy,rc,dc", "-n", namespace, "--kubeconfig", kubeconfig]


def top_imports(stderr: str, count: int = 6) -> list[tuple[str, float]]:
    """Import time (ms) of the modules imported from the top level, heaviest first (-X importtime)."""
    found: list[tuple[str, float]] = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.removeprefix("import time:").split("|")
        if not name.startswith("  ") and name.strip():  # nesting is shown by indentation
            found.append((name.strip(), int(cumulative) / 1000))
    return sorted(found, key=lambda item: -item[1])[:count]
