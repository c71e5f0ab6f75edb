"""Cases 1-3: group rollout time against the limit and the old stage, failure to a consistent state,
the repair commands, and the API requests of all of them (collected from the same runs).

Every group lives in its own namespace ``bench-gN`` (N workloads, half DCs and half Deployments, one
replica each); ``bench-alone`` holds one DC and one Deployment for the limit. Workloads start on an image
that is ready at once; every run then sets a tag never used before, ready 3 s after start (``-slow3``).
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bench.context import REPO, CliRun, Ctx
from bench.drive import body, workload_names
from bench.metrics import Stats
from rollguard.core.structs import DC, DEPLOYMENT, KIND_NAMES

if TYPE_CHECKING:
    from bench.verify import VerifyResult

SIZES = (1, 5, 20, 50)
ALONE = "bench-alone"
START_IMAGE = f"{REPO}:v0"
ROLLOUT_TIMEOUT = 600  # rollguard's default --timeout (10m), what a failure is compared with
OFF_TIMEOUT = 60  # --no-fail-fast stands in for the 600 s deadline with this --timeout
OFF_SIZE = 5
# repetitions per N; fewer for the largest N, where one run of the old stage takes minutes
LIMIT_REPS = 3
ROLLGUARD_REPS = {1: 3, 5: 3, 20: 3, 50: 2}
BASELINE_REPS = {1: 3, 5: 3, 20: 1, 50: 1}
CRASH_REPS = {1: 3, 5: 3, 20: 2, 50: 1}
REPAIR_SIZE = 20
REPAIR_REPS = 2
MANIFEST_SIZE = 20
MANIFEST_REPS = 2


def namespace(n: int) -> str:
    return f"bench-g{n}"


@dataclass
class GroupResult:
    """Case 1 for one N, and the runs case 3 counts."""

    n: int
    rollguard: Stats = field(default_factory=Stats)
    engine: Stats = field(default_factory=Stats)
    # when the last change was written: from the run's first request until the last workload write was
    # answered (bench.counted); the run clock's 0.1 s stamp of its "changed" line where that is missing
    applied: Stats = field(default_factory=Stats)
    # the parts of ``applied`` (bench.counted.phases): preflight, hold (lock, claims, journal), writes
    phases: dict[str, Stats] = field(default_factory=dict)
    together: Stats = field(default_factory=Stats)  # the sandbox's floor: all N changed at once, bare
    together_written: Stats = field(default_factory=Stats)  # the floor's GET and PUT of all N, answered
    baseline: Stats = field(default_factory=Stats)
    runs: list[CliRun] = field(default_factory=list)
    baseline_requests: list[Counter[str]] = field(default_factory=list)
    baseline_server: list[Counter[str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class FailResult:
    """Case 2 for one N: one workload's new image crash-loops."""

    n: int
    wall: Stats = field(default_factory=Stats)
    engine: Stats = field(default_factory=Stats)
    verified: list[bool] = field(default_factory=list)
    error: str = ""
    runs: list[CliRun] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class RepairResult:
    """The repair commands on one group: redeploy all of it; revert the half of it changed by hand."""

    n: int
    redeploy: Stats = field(default_factory=Stats)
    revert: Stats = field(default_factory=Stats)
    reverted: int = 0  # workloads the revert had to change
    verified: list[bool] = field(default_factory=list)
    runs: dict[str, list[CliRun]] = field(default_factory=lambda: {"redeploy": [], "revert": []})
    problems: list[str] = field(default_factory=list)


@dataclass
class ManifestResult:
    """``rollout -f``: the group's N workloads as manifests, each with a new image and a new env var."""

    n: int
    wall: Stats = field(default_factory=Stats)
    engine: Stats = field(default_factory=Stats)
    verified: list[bool] = field(default_factory=list)
    runs: list[CliRun] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class RolloutResults:
    limit: dict[str, Stats] = field(default_factory=lambda: {DC: Stats(), DEPLOYMENT: Stats()})
    groups: dict[int, GroupResult] = field(default_factory=dict)
    fails: dict[int, FailResult] = field(default_factory=dict)
    no_fail_fast: FailResult | None = None
    repairs: RepairResult | None = None
    manifests: ManifestResult | None = None
    verify: VerifyResult | None = None  # bench/verify.py
    setup_seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    current: dict[str, str] = field(default_factory=dict)  # namespace -> the image its group runs now

    def limit_for(self, n: int) -> float:
        """The slowest single workload's own rollout time among the kinds a group of ``n`` holds."""
        kinds = {kind for kind, _ in workload_names(n)}
        return max(self.limit[k].median for k in kinds)


def setup(ctx: Ctx, res: RolloutResults, sizes: tuple[int, ...]) -> None:
    """Create every group at once (their first rollouts overlap), each waiting for its first rollout."""
    plan = [(ALONE, 2)] + [(namespace(n), n) for n in sizes]

    def create(item: tuple[str, int]) -> tuple[str, bool, str]:
        ns, n = item
        p = ctx.drive("create", "-n", ns, "--workloads", str(n), "--image", START_IMAGE)
        return ns, bool((p.json() or {}).get("ok")), p.tail()

    with ThreadPoolExecutor(len(plan)) as pool:
        for ns, ok, tail in pool.map(create, plan):
            res.current[ns] = START_IMAGE
            if not ok:
                res.problems.append(f"set-up of {ns} did not complete: {tail}")


def image_args(n: int, image: str, crash: tuple[int, str] | None = None) -> list[str]:
    args = []
    for i, (kind, name) in enumerate(workload_names(n)):
        ref = crash[1] if crash is not None and crash[0] == i else image
        args += ["--image", f"{KIND_NAMES[kind].key}/{name}={ref}"]
    return args


def measure_limit(ctx: Ctx, res: RolloutResults) -> None:
    """Each kind alone, in turn: its change to complete, by watch (the physical limit of a group)."""
    for _ in ctx.reps(LIMIT_REPS, 0.25):
        for kind, name in ((DC, "dc-0"), (DEPLOYMENT, "deploy-1")):
            image = ctx.image()
            p = ctx.drive("limit", "-n", ALONE, "--kind", kind, "--name", name, "--image", image)
            data = p.json() or {}
            if data.get("ok"):
                res.limit[kind].add(float(data["seconds"]))
            else:
                res.problems.append(f"limit run of {kind} failed: {data.get('error') or p.tail()}")
    ctx.log(f"limit: DC {res.limit[DC].fmt()}, Deployment {res.limit[DEPLOYMENT].fmt()}")


def group_rollouts(ctx: Ctx, res: RolloutResults, sizes: tuple[int, ...], *, old_stage: bool = True) -> None:
    """rollguard, the bare floor and the old stage on the same group, interleaved so that load drifts hit
    all of them alike (``old_stage`` False: without the old stage, whose runs take minutes)."""
    for n in sizes:
        ns, g = namespace(n), GroupResult(n)
        res.groups[n] = g
        for i in ctx.reps(max(ROLLGUARD_REPS[n], BASELINE_REPS[n] if old_stage else 0), 0.55):
            if i < ROLLGUARD_REPS[n]:
                image = ctx.image()
                run = ctx.rollguard(["rollout", "-n", ns, "-l", "app=bench", *image_args(n, image)])
                if run.status == "succeeded":
                    g.rollguard.add(run.seconds)
                    if run.engine_seconds is not None:
                        g.engine.add(run.engine_seconds)
                    applied = run.last_write if run.last_write is not None else run.applied_seconds
                    if applied is not None:
                        g.applied.add(applied)
                    for part, seconds in run.phases.items():
                        g.phases.setdefault(part, Stats()).add(seconds)
                    g.runs.append(run)
                    res.current[ns] = image
                else:
                    g.problems.append(f"rollguard run ended {run.status}: {run.proc.tail()}")
                image = ctx.image()
                p = ctx.drive("together", "-n", ns, "--workloads", str(n), "--image", image)
                data = p.json() or {}
                if data.get("ok"):
                    g.together.add(float(data["seconds"]))
                    if "written" in data:
                        g.together_written.add(float(data["written"]))
                    res.current[ns] = image
                else:
                    g.problems.append(f"all-at-once run failed: {data.get('error') or p.tail()}")
            if old_stage and i < BASELINE_REPS[n]:
                image = ctx.image()
                p, server = ctx.drive_counted(
                    "baseline", "-n", ns, "--workloads", str(n), "--image", image, timeout=60 + 20 * n
                )
                data = p.json() or {}
                if data.get("ok"):
                    g.baseline.add(p.seconds)
                    g.baseline_requests.append(Counter(data.get("requests", {})))
                    g.baseline_server.append(server)
                    res.current[ns] = image
                else:
                    g.problems.append(f"old-stage run failed: {data.get('error') or p.tail()}")
        ctx.log(
            f"N={n}: rollguard {g.rollguard.fmt()}, floor {g.together.fmt()}, old stage {g.baseline.fmt()}"
        )


def crash_run(ctx: Ctx, res: RolloutResults, n: int, fail: FailResult, extra: tuple[str, ...] = ()) -> None:
    """One rollout whose middle workload crash-loops, then an independent check of the group."""
    ns = namespace(n)
    old = res.current[ns]
    args = image_args(n, ctx.image(), crash=(n // 2, ctx.image("-crash")))
    run = ctx.rollguard(["rollout", "-n", ns, "-l", "app=bench", *args, *extra])
    check = ctx.drive("check", "-n", ns, "--workloads", str(n), "--image", old)
    verified = bool((check.json() or {}).get("ok"))
    fail.verified.append(verified and run.status == "reverted")
    fail.runs.append(run)
    if run.status == "reverted":
        fail.wall.add(run.seconds)
        if run.engine_seconds is not None:
            fail.engine.add(run.engine_seconds)
        fail.error = fail.error or str(run.report.get("error", ""))
    else:
        fail.problems.append(f"run ended {run.status}: {run.proc.tail()}")
    if not verified:
        fail.problems.append(
            f"group not back on {old}: {(check.json() or {}).get('problems') or check.tail()}"
        )


def failures(ctx: Ctx, res: RolloutResults, sizes: tuple[int, ...]) -> None:
    for n in sizes:
        fail = FailResult(n)
        res.fails[n] = fail
        for _ in ctx.reps(CRASH_REPS[n], 0.7):
            crash_run(ctx, res, n, fail)
        ctx.log(f"N={n} with one crashing workload: {fail.wall.fmt()}")


def no_fail_fast(ctx: Ctx, res: RolloutResults, sizes: tuple[int, ...]) -> None:
    """Issue 9's other half: the same crash with --no-fail-fast, which waits out --timeout 60s."""
    n = OFF_SIZE if OFF_SIZE in sizes else sizes[-1]
    fail = FailResult(n)
    crash_run(ctx, res, n, fail, ("--no-fail-fast", "--timeout", f"{OFF_TIMEOUT}s"))
    res.no_fail_fast = fail
    ctx.log(f"--no-fail-fast, --timeout {OFF_TIMEOUT}s, N={n}: {fail.wall.fmt()}")


def repairs(ctx: Ctx, res: RolloutResults, sizes: tuple[int, ...]) -> None:
    """`rollguard redeploy -l` (the whole group rolls out anew) and `rollguard revert -l` after hand edits."""
    n = REPAIR_SIZE if REPAIR_SIZE in sizes else sizes[-1]
    ns, rep = namespace(n), RepairResult(n)
    res.repairs = rep
    for _ in ctx.reps(REPAIR_REPS, 0.8):
        run = ctx.rollguard(["redeploy", "-n", ns, "-l", "app=bench"])
        if run.proc.code == 0:
            rep.redeploy.add(run.seconds)
            rep.runs["redeploy"].append(run)
        else:
            rep.problems.append(f"redeploy ended {run.status}: {run.proc.tail()}")
        damage = ctx.drive("drift", "-n", ns, "--workloads", str(n), "--image", ctx.image())
        if not (damage.json() or {}).get("ok"):
            rep.problems.append(f"could not set up the damage for revert: {damage.tail()}")
            continue
        rep.reverted = int((damage.json() or {}).get("changed", 0))
        run = ctx.rollguard(["revert", "-n", ns, "-l", "app=bench"])
        check = ctx.drive("check", "-n", ns, "--workloads", str(n), "--image", res.current[ns])
        rep.verified.append(run.proc.code == 0 and bool((check.json() or {}).get("ok")))
        if run.proc.code == 0:
            rep.revert.add(run.seconds)
            rep.runs["revert"].append(run)
        else:
            rep.problems.append(f"revert ended {run.status}: {run.proc.tail()}")
        if not (check.json() or {}).get("ok"):
            rep.problems.append(f"after revert: {(check.json() or {}).get('problems') or check.tail()}")
    ctx.log(f"N={n}: redeploy {rep.redeploy.fmt()}, revert of {rep.reverted} {rep.revert.fmt()}")


def manifest_rollouts(ctx: Ctx, res: RolloutResults, sizes: tuple[int, ...]) -> None:
    """`rollguard rollout -f FILE` of the whole group: the manifests as a chart would render them (the
    workloads' own bodies) with a new image and a new env var each; then the same check as case 2."""
    import yaml

    n = MANIFEST_SIZE if MANIFEST_SIZE in sizes else sizes[-1]
    ns, result = namespace(n), ManifestResult(n)
    res.manifests = result
    for rep in ctx.reps(MANIFEST_REPS, 0.9):
        image = ctx.image()
        docs = []
        for kind, name in workload_names(n):
            doc = body(kind, name, image)
            doc["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "RELEASE", "value": image}]
            docs.append(doc)
        path = ctx.tmp / f"manifests-{rep}.yaml"
        path.write_text(yaml.safe_dump_all(docs))
        run = ctx.rollguard(["rollout", "-n", ns, "-l", "app=bench", "-f", str(path)])
        check = ctx.drive("check", "-n", ns, "--workloads", str(n), "--image", image)
        ok = run.status == "succeeded" and bool((check.json() or {}).get("ok"))
        result.verified.append(ok)
        if run.status == "succeeded":
            result.wall.add(run.seconds)
            if run.engine_seconds is not None:
                result.engine.add(run.engine_seconds)
            result.runs.append(run)
            res.current[ns] = image
        else:
            result.problems.append(f"rollout -f ended {run.status}: {run.proc.tail()}")
        if not (check.json() or {}).get("ok"):
            result.problems.append(
                f"after rollout -f: {(check.json() or {}).get('problems') or check.tail()}"
            )
    ctx.log(f"N={n}: rollout -f {result.wall.fmt()}")
