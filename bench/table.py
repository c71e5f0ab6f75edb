"""docs/BENCHMARKS.md from the results: headline, one section per case, the machine and the method."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from bench.cases import OFF_TIMEOUT, ROLLOUT_TIMEOUT, FailResult, GroupResult, RolloutResults
from bench.context import CliRun
from bench.counted import PHASES
from bench.drive import workload_names
from bench.reads import SCALE_NAMESPACES, ReadResults
from rollguard.core.structs import DC, DEPLOYMENT, KIND_NAMES

SERVER_VERBS = ("GET", "LIST", "WATCH", "POST", "PUT", "PATCH", "DELETE")
OWN_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")
GOAL = 1.2


@dataclass
class Meta:
    command: str
    machine: dict[str, str]
    seconds: float = 0.0
    load_start: str = ""
    load_end: str = ""
    sandbox: str = ""
    idle_rate: Counter[str] = field(default_factory=Counter)  # server requests per second, idle sandbox
    skipped: list[str] = field(default_factory=list)  # "not measured: why" lines


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return [*out, ""]


def ratio(a: float, b: float) -> str:
    return "n/a" if not (a > 0 and b > 0) or math.isnan(a) or math.isnan(b) else f"{a / b:.2f}x"


def med(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def median_counts(counts: Sequence[Counter[str]]) -> Counter[str]:
    keys = {k for c in counts for k in c}
    return Counter({k: round(med([c.get(k, 0) for c in counts])) for k in keys})


def fit(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares ``y = a + b x``."""
    if len(points) < 2:
        return float("nan"), float("nan")
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else float("nan")
    return my - b * mx, b


# -- sections ---------------------------------------------------------------------------------------------


# Issue 29, the guard's own cost: (figure, goal, unit); "requests" goals are at most, time goals at most.
COST_GOALS = {
    "requests per added workload, successful rollout (Lease renewals apart)": 3.0,
    "requests, fixed part, successful rollout (Lease renewals apart)": 25.0,
    "requests per added workload, crash and revert (Lease renewals apart)": 5.0,
    "last change written, N=20 (s from the run's first request)": 0.3,
    "last change written, N=50 (s from the run's first request)": 0.6,
    "whole run over the floor, N=20 (s, process wall time)": 0.3,
    "`rollguard status -n NS` / `kubectl get deploy,rc,dc -n NS` (paired)": 2.0,
    "`rollguard --help` (s, whole process)": 0.1,
}


def without_renewals(run: CliRun) -> Counter[str]:
    """A run's own requests by verb, less its Lease renewals (PUTs that come with time, not with N)."""
    return run.own - Counter({"update": run.renewals})


def fits(groups: dict[int, list[CliRun]], *, renewals: bool = False) -> dict[str, tuple[float, float]]:
    """Least-squares fixed part and per-added-workload slope of rollguard's own requests over N, in all
    (``"total"``) and by verb, from the median counts of each N's runs; ``renewals`` False: less the
    Lease renewals, which a run makes one per third of its lease however many workloads it holds (a
    slow run at a large N on a busy machine makes more of them)."""
    pick = (lambda x: x.own) if renewals else without_renewals
    medians = {n: median_counts([pick(x) for x in runs]) for n, runs in sorted(groups.items()) if runs}
    out = {"total": fit([(n, sum(c.values())) for n, c in medians.items()])}
    for verb in OWN_VERBS:
        out[verb] = fit([(n, c.get(verb, 0)) for n, c in medians.items()])
    return out


def same_kinds(runs: dict[int, list[CliRun]]) -> dict[int, list[CliRun]]:
    """The sizes whose groups hold the same kinds as the largest one (both kinds: every N but 1).

    A kind in the group costs requests of its own, once: its revisions' list and the watches of its
    workloads and revisions. A group of 1 holds a DC alone, so going from 1 to 5 workloads adds a kind
    as well as workloads; the cost of an added workload is read where only workloads are added."""
    sizes = [n for n, x in runs.items() if x]
    if not sizes:
        return {}
    kinds = {n: {kind for kind, _ in workload_names(n)} for n in sizes}
    return {n: runs[n] for n in sizes if kinds[n] == kinds[max(sizes)]}


def _kinds_note(runs: dict[int, list[CliRun]], b_all: float) -> str:
    """What the fit over every N says besides the same-kinds one, and why they differ."""
    left = sorted(n for n, x in runs.items() if x and n not in same_kinds(runs))
    if not left:
        return ""
    return (
        f"; {b_all:.2f} over every N: the group of {', '.join(map(str, left))} holds DCs alone, so one list "
        "and two watches fewer (the Deployments' ReplicaSets listed, Deployments and ReplicaSets watched: "
        "once per kind, not per workload)"
    )


def _phases(g: GroupResult) -> str:
    """``applied``'s parts (bench.counted.phases): where the time until the last write went."""
    names = {"reads": "reads", "dry_runs": "dry runs", "hold": "lock, claims, journal", "writes": "writes"}
    parts = [f"{names[p]} {g.phases[p].median:.2f}" for p in PHASES if p in g.phases and g.phases[p].n]
    return f" ({', '.join(parts)})" if parts else ""


def cost_goals(r: RolloutResults, reads: ReadResults) -> list[list[str]]:
    """Issue 29's figures against their goals: measured (with the measured breakdown of a time), goal,
    and met, or by how much it is missed and why."""
    rows: list[list[str]] = []

    def row(name: str, value: float | None, shown: str, why: str = "") -> None:
        goal = COST_GOALS[name]
        if value is None or math.isnan(value):
            rows.append([name, "not measured", f"<= {goal:g}", "-"])
            return
        verdict = (
            "met" if value <= goal + 1e-9 else f"missed by {value - goal:.2g}" + (f": {why}" if why else "")
        )
        rows.append([name, shown, f"<= {goal:g}", verdict])

    runs = {n: g.runs for n, g in r.groups.items()}
    alike = same_kinds(runs)
    if len(alike) >= 2:
        (a, b), (_, b2) = fits(alike)["total"], fits(alike, renewals=True)["total"]
        sizes = ", ".join(map(str, sorted(alike)))
        b_all = fits(runs)["total"][1]
        row("requests per added workload, successful rollout (Lease renewals apart)", b,
            f"{b:.2f} over N = {sizes} ({b2:.2f} with them){_kinds_note(runs, b_all)}",
            "more than the dry run, the write and the Event per workload: look at the fit by verb")  # fmt: skip
        row("requests, fixed part, successful rollout (Lease renewals apart)", a, f"{a:.1f} over N = {sizes}")
    crashed = same_kinds({n: f.runs for n, f in r.fails.items()})
    if len(crashed) >= 2:
        b = fits(crashed)["total"][1]
        row("requests per added workload, crash and revert (Lease renewals apart)", b,
            f"{b:.2f} over N = {', '.join(map(str, sorted(crashed)))}",
            "write conflicts with the controllers during the revert (a GET and a PUT again)")  # fmt: skip
    for n, name in ((20, "last change written, N=20 (s from the run's first request)"),
                    (50, "last change written, N=50 (s from the run's first request)")):  # fmt: skip
        g = r.groups.get(n)
        if g is not None and g.applied.n:
            bare = (
                f"; the bare script's own {n} writes (GET and PUT each, all at once) took "
                f"{g.together_written.median:.2f} s to be answered on this sandbox"
                if g.together_written.n
                else ""
            )
            row(name, g.applied.median, f"{g.applied.median:.2f}{_phases(g)}",
                "the preflight's reads; its dry runs, which cost the API server (and the OpenShift "
                "emulation's admission of each DC) about what the writes cost: every write is admitted "
                "twice; the lock, claims and journal; the writes" + bare)  # fmt: skip
    g = r.groups.get(20)
    if g is not None and g.rollguard.n and g.together.n:
        over = g.rollguard.median - g.together.median
        outside = g.rollguard.median - g.engine.median if g.engine.n else float("nan")
        row(
            "whole run over the floor, N=20 (s, process wall time)",
            over,
            f"{over:+.2f} ({g.rollguard.median:.2f} against {g.together.median:.2f})",
            f"{outside:.2f} s of it outside the run's clock (interpreter start-up, imports, the report)"
            if not math.isnan(outside)
            else "",
        )
    interpreter = (
        f"; `python -c pass` alone takes {reads.interpreter.median:.3f} s here "
        f"({reads.bare_interpreter.median:.3f} s without site, i.e. without the environment's .pth files, "
        "this tree's editable install among them, which a wheel's install has not)"
        if reads.interpreter.n and reads.bare_interpreter.n
        else ""
    )
    if reads.paired and reads.kubectl.n and reads.paired in reads.startup:
        mine = reads.startup[reads.paired].median
        value = mine / reads.kubectl.median
        first, asked, rest = (x.get(reads.paired) for x in (reads.first_request, reads.requests, reads.rest))
        parts = (
            f"; through bench.counted: {first.median:.3f} s until the first request (interpreter, imports, "
            f"kubeconfig), {asked.median:.3f} s until the last answer (the lists, sent at once), "
            f"{rest.median:.3f} s the rest (assessing, printing, exit)"
            if first is not None and first.n and asked is not None and asked.n and rest is not None
            else ""
        )
        row(
            "`rollguard status -n NS` / `kubectl get deploy,rc,dc -n NS` (paired)",
            value,
            f"{value:.2f}x ({mine:.3f} s against {reads.kubectl.median:.3f} s; pairs' median "
            f"{med(reads.pair_ratios):.2f}x{parts})",
            "a Python process's start-up and imports against a Go binary's" + interpreter,
        )
    helped = reads.startup.get("rollguard --help")
    if helped is not None and helped.n:
        row("`rollguard --help` (s, whole process)", helped.median, f"{helped.median:.3f}",
            "the interpreter and the parser's imports" + interpreter)  # fmt: skip
    return rows


def headline(r: RolloutResults, reads: ReadResults) -> list[str]:
    out = ["## Headline", ""]
    goals = cost_goals(r, reads)
    if goals:
        out += ["The guard's own cost against issue 29's goals (medians; requests counted in rollguard's "
                "client, deterministic; times on this machine, see the note on noise above):", ""]  # fmt: skip
        out += table(["figure", "measured", "goal", "verdict"], goals)
    g = r.groups.get(20)
    if g and g.rollguard.n:
        lim = r.limit_for(20)
        verdict = "within" if g.rollguard.median <= GOAL * lim else "outside"
        line = (
            f"- **Group of 20, new pods ready after 3 s**: rollguard {g.rollguard.median:.1f} s = "
            f"**{ratio(g.rollguard.median, lim)} the limit** ({lim:.1f} s, the slowest workload alone; goal "
            f"<= {GOAL}x: {verdict}, process start-up included; the run itself {ratio(g.engine.median, lim)})."
        )
        if g.together.n and g.engine.n:
            line += (
                f" The sandbox's own floor for 20 rollouts at once (changed together by a bare script, no "
                f"checks) is {g.together.median:.1f} s = {ratio(g.together.median, lim)} the limit: rollguard's "
                f"run takes {ratio(g.engine.median, g.together.median)} that floor, and "
                f"{g.rollguard.median - g.engine.median:.1f} s go to process start-up and the report."
            )
        if g.baseline.n:
            line += (
                f" The old stage's sequence: {g.baseline.median:.0f} s, "
                f"{ratio(g.baseline.median, g.rollguard.median)} rollguard's time."
            )
        out.append(line)
    f = r.fails.get(20)
    if f and f.wall.n:
        out.append(
            f"- **Failure**: 20 workloads, one crash-looping, back on the old state and verified in "
            f"{f.wall.median:.1f} s ({f.wall.median / ROLLOUT_TIMEOUT:.1%} of the 600 s rollout timeout)."
        )
    off = r.no_fail_fast
    on = r.fails.get(off.n) if off else None
    if off and on and on.wall.n and off.wall.n:
        out.append(
            f"- **Fail fast** (issue 9, N={off.n}): {on.wall.median:.1f} s with fail-fast; without it the run "
            f"waits for the deadline: >= 600 s with the 600 s default (measured: {off.wall.median:.0f} s "
            f"with --timeout {OFF_TIMEOUT}s)."
        )
    if reads.tui_first.n:
        out.append(
            f"- **TUI first screen**, 300 workloads: {reads.tui_first.median:.2f} s after the data arrived "
            f"(goal, issue 5: within 1 s); a keypress {reads.tui_key.median * 1000:.0f} ms (median)."
        )
    elif reads.tui_missing:
        out.append(f"- **TUI first screen**: not measured yet: {reads.tui_missing}.")
    biggest = [
        row for row in reads.rows if row.wall.n and row.workloads == max(x.workloads for x in reads.rows)
    ]
    for row in biggest:
        own = median_counts([x.own for x in row.runs])
        out.append(
            f"- **{row.command}** over {row.workloads} workloads in {SCALE_NAMESPACES} namespaces: "
            f"{row.wall.median:.1f} s, {sum(own.values())} API requests."
        )
    return [*out, ""]


def section_rollout(r: RolloutResults) -> list[str]:
    out = [
        "## 1. Group rollout time",
        "",
        "N workloads (half DCs, half Deployments, 1 replica each) get a new image whose pods are ready 3 s "
        "after start. **Limit**: the slowest single workload's own rollout (image changed, then watched "
        "until complete), measured alone in the same sandbox: DC "
        f"{r.limit[DC].fmt()}, Deployment {r.limit[DEPLOYMENT].fmt()}; a group's limit is the larger median "
        "of the kinds it holds. **Floor**: the same N workloads changed all at once by a bare script (one "
        "GET and PUT each, in parallel, no preflight, lock, journal or report), then watched until all are "
        "complete: what N rollouts at once cost this sandbox, whose API server, controllers and kubelet "
        "share the machine's cores. **rollguard**: wall time of the `rollguard rollout` process (start-up, "
        "preflight, lock, journal, changes, watch, report); **run**: the run's own clock (its progress "
        "lines, 0.1 s steps, from before preflight to the group's verdict), i.e. without interpreter "
        "start-up, imports and what follows the verdict; **last change**: when, on that clock, the last "
        "workload's change was written. **Old stage**: the old pipeline step replayed against the same "
        "group (pause all; then per workload: set image, resume, wait for its rollout by watch, one after "
        "another), one process.",
        "",
    ]
    rows = []
    for n in sorted(r.groups):
        g, lim = r.groups[n], r.limit_for(n)
        rows.append([
            n, f"{lim:.2f} s", g.together.fmt(), ratio(g.together.median, lim), g.rollguard.fmt(),
            ratio(g.rollguard.median, lim), g.engine.fmt(), ratio(g.engine.median, lim),
            ratio(g.engine.median, g.together.median), g.applied.fmt(),
        ])  # fmt: skip
    out += table(
        ["N", "limit", "floor (all at once, bare)", "floor vs limit", "rollguard (wall)", "vs limit",
         "rollguard (run)", "run vs limit", "run vs floor", "last change"],
        rows,
    )  # fmt: skip
    out.append(f"Goal (issue 7): rollguard within {GOAL}x the limit at N=20.")
    out += ["", "The old stage on the same groups:", ""]
    out += table(
        ["N", "old stage", "old stage vs limit", "old stage / rollguard"],
        [
            [n, g.baseline.fmt(), ratio(g.baseline.median, r.limit_for(n)),
             ratio(g.baseline.median, g.rollguard.median)]
            for n, g in sorted(r.groups.items())
        ],
    )  # fmt: skip
    return [*out, "", *where_time_goes(r), ""]


def own_slopes(r: RolloutResults) -> dict[str, float]:
    """rollguard's own requests per added workload, by verb (least-squares slope over N)."""
    return {
        verb: fit(
            [(n, med([x.own.get(verb, 0) for x in g.runs])) for n, g in sorted(r.groups.items()) if g.runs]
        )[1]
        for verb in OWN_VERBS
    }


def explain(slopes: dict[str, float]) -> str:
    """What the per-workload slopes mean in this engine (only what the numbers show)."""
    parts = []
    if 2.5 <= slopes.get("update", 0) < 3.5:
        parts.append("three PUTs: the preflight's dry run, the workload's change and its revert")
    elif 1.5 <= slopes.get("update", 0) < 2.5:
        parts.append("two PUTs: the preflight's dry run and the workload's change")
    elif 0.5 <= slopes.get("update", 0) < 1.5:
        parts.append("one PUT: the workload's change")
    if 0.5 <= slopes.get("create", 0) < 1.5:
        parts.append("one POST: the audit Event")
    return f" ({'; '.join(parts)})" if parts else ""


def where_time_goes(r: RolloutResults) -> list[str]:
    """Split rollguard's time over the limit into its parts, for the largest groups measured."""
    out = []
    for n in [n for n in sorted(r.groups) if n >= 20] or sorted(r.groups)[-1:]:
        g, lim = r.groups[n], r.limit_for(n)
        if not (g.rollguard.n and g.engine.n and g.applied.n):
            continue
        outside = g.rollguard.median - g.engine.median
        line = (
            f"- N={n}: of {g.rollguard.median:.1f} s ({g.rollguard.median - lim:+.1f} s over the limit), "
            f"{outside:.1f} s are outside the run (interpreter start-up and imports, see case 5, and what "
            f"follows the verdict: the report); the last change is written {g.applied.median:.2f} s after "
            f"the run's first request{_phases(g) or ' (preflight, lock, journal, then all writes at once)'}; "
            "the verdict comes "
            f"{g.engine.median - g.applied.median:.1f} s later, against {lim:.1f} s for one workload alone."
        )
        if g.together.n:
            line += (
                f" Changed at once without any of rollguard's checks, the same {n} rollouts take "
                f"{g.together.median:.1f} s ({g.together.median - lim:+.1f} s over the limit): that part is "
                f"the sandbox's, {n} rollouts sharing its cores; rollguard's run adds "
                + _added(g.engine.median - g.together.median)
            )
        out.append(line)
    return ["**Where rollguard's time goes** (medians):", *out] if out else []


def _added(seconds: float) -> str:
    if abs(seconds) < 0.1:  # the run's clock has 0.1 s steps
        return "nothing measurable to it (within the run clock's 0.1 s step)."
    return f"{seconds:+.1f} s to it."


def _fail_row(f: FailResult) -> list[object]:
    crash = workload_names(f.n)[f.n // 2]
    ok = sum(f.verified)
    return [
        f.n, f"{KIND_NAMES[crash[0]].key}/{crash[1]}", f.wall.fmt(), f.engine.fmt(),
        f"{f.wall.median / ROLLOUT_TIMEOUT:.1%}" if f.wall.n else "n/a", f"{ok} of {len(f.verified)}",
    ]  # fmt: skip


def section_failure(r: RolloutResults) -> list[str]:
    out = [
        "## 2. Failure to a consistent state",
        "",
        "The same groups; the middle workload's new image crash-loops (the others get a `-slow3` image). Time "
        "from the start of `rollguard rollout` to its exit with the group reverted and verified by rollguard "
        "(report status `reverted`); afterwards the benchmark checks independently that every workload runs "
        "its old image, complete and not paused (**verified** column). The old state's pods also take 3 s "
        f"to become ready. Compared with the rollout timeout ({ROLLOUT_TIMEOUT} s, the default `--timeout` "
        "and the workloads' own deadlines).",
        "",
    ]
    out += table(
        ["N", "crashing", "start -> verified old state (wall)", "engine", "of the 600 s timeout", "verified"],
        [_fail_row(r.fails[n]) for n in sorted(r.fails)],
    )
    with_error = [n for n in sorted(r.fails) if r.fails[n].error]
    if with_error:
        n = with_error[-1]
        out += [f"The cause rollguard reported (a run with N={n}): `{r.fails[n].error[:300]}`", ""]
    off = r.no_fail_fast
    on = r.fails.get(off.n) if off else None
    if off is not None:
        out += ["### Fail fast on and off (issue 9), platform deadline 600 s", ""]
        revert = off.wall.median - OFF_TIMEOUT if off.wall.n else float("nan")
        rows = []
        if on is not None:
            rows.append(["on (default)", on.wall.fmt(), "the crash-looping pod is evidence: revert at once"])
        rows.append([
            "off (`--no-fail-fast`)",
            f">= 600 s (about {600 + revert:.0f} s)" if off.wall.n else "n/a",
            f"waits for the deadline, then reverts; measured with `--timeout {OFF_TIMEOUT}s` instead of waiting "
            f"600 s: {off.wall.fmt()}, i.e. {revert:.1f} s after the deadline",
        ])  # fmt: skip
        out += [f"N={off.n}, deadlines (`timeoutSeconds`, `progressDeadlineSeconds`) left at 600 s.", ""]
        out += table(["fail fast", "start -> verified old state", "how"], rows)
    return out


def section_repairs(r: RolloutResults) -> list[str]:
    rep = r.repairs
    if rep is None:
        return []
    lim = r.limit_for(rep.n)
    out = [
        "### Repairs (issue 4)",
        "",
        f"On the group of {rep.n}: `rollguard redeploy -n NS -l app=bench` rolls every workload out anew (its "
        f"pods are ready after 3 s); `rollguard revert -n NS -l app=bench` after {rep.reverted or 'half the'} "
        "workloads (DCs and Deployments) were set to another image by hand and rolled out: it returns them to "
        "the group's last verified state; afterwards the benchmark checks every workload's image, completion "
        "and paused flag.",
        "",
    ]
    out += table(
        ["command", "workloads changed", "time (wall)", "vs limit", "verified"],
        [
            ["`redeploy -l`", rep.n, rep.redeploy.fmt(), ratio(rep.redeploy.median, lim), "-"],
            ["`revert -l`", rep.reverted, rep.revert.fmt(), ratio(rep.revert.median, lim),
             f"{sum(rep.verified)} of {len(rep.verified)}"],
        ],
    )  # fmt: skip
    return out


def section_manifests(r: RolloutResults) -> list[str]:
    man = r.manifests
    if man is None:
        return []
    lim = r.limit_for(man.n)
    plain = r.groups.get(man.n)
    out = [
        "### Manifest rollout (issue 15)",
        "",
        f"On the group of {man.n}: `rollguard rollout -n NS -l app=bench -f FILE`, FILE holding every workload "
        "as a chart would render it, each with a new image and a new env var (preflight sends every write as "
        "a server-side dry run first); then the same check as after a failure (images, complete, not paused).",
        "",
    ]
    out += table(
        ["command", "workloads", "time (wall)", "vs limit", "`--image` run of the same N", "verified"],
        [["`rollout -f`", man.n, man.wall.fmt(), ratio(man.wall.median, lim),
          plain.rollguard.fmt() if plain is not None else "-", f"{sum(man.verified)} of {len(man.verified)}"]],
    )  # fmt: skip
    out += [f"- {p}" for p in man.problems]
    return out


def _own_row(label: str, n: int, own: Sequence[Counter[str]], server: Sequence[Counter[str]]) -> list[object]:
    counts = median_counts(own)
    total = sum(counts.values())
    srv = med([sum(c.values()) for c in server])
    return [
        label, n, *(counts.get(v, 0) for v in OWN_VERBS), total, f"{total / n:.2f}",
        f"{srv:.0f}" if server else "n/a", f"{srv / n:.1f}" if server else "n/a",
    ]  # fmt: skip


def _runs_row(label: str, n: int, runs: Sequence[CliRun]) -> list[object]:
    return _own_row(label, n, [x.own for x in runs], [x.server for x in runs])


def section_api(r: RolloutResults, reads: ReadResults, meta: Meta) -> list[str]:
    out = [
        "## 3. API cost",
        "",
        "Requests per run. **Server** columns: the API server's `apiserver_request_total` (its `/metrics`, read "
        "with the sandbox's admin token) before and after each run: everything the server served meanwhile, "
        "so also the requests of the controllers and the kubelet carrying out the rollout (the counter has no "
        "client label). **By verb** columns: rollguard's own requests, counted in its client "
        "(`rollguard.cluster.client.Client.requests`, through `python -m bench.counted`); for the old stage, the replay's "
        "own client. Medians over the runs of cases 1, 2 (with the repairs) and 4.",
        "",
    ]
    rows = []
    for n in sorted(r.groups):
        if r.groups[n].runs:
            rows.append(_runs_row("rollout (succeeds)", n, r.groups[n].runs))
    for n in sorted(r.fails):
        if r.fails[n].runs:
            rows.append(_runs_row("rollout (crash, reverted)", n, r.fails[n].runs))
    if r.manifests is not None and r.manifests.runs:
        rows.append(_runs_row("rollout -f", r.manifests.n, r.manifests.runs))
    if r.repairs is not None:
        for command, runs in r.repairs.runs.items():
            if runs:
                rows.append(_runs_row(f"{command} -l", r.repairs.n, runs))
    for n in sorted(r.groups):
        if r.groups[n].baseline_requests:
            g = r.groups[n]
            rows.append(_own_row("old stage", n, g.baseline_requests, g.baseline_server))
    for row in reads.rows:
        if row.runs and row.command.startswith("drift-check"):
            rows.append(_runs_row(row.command, row.workloads, row.runs))
    out += table(
        ["run", "workloads", *OWN_VERBS, "total", "per workload", "server total", "server per workload"], rows
    )
    server_rows = []
    for label, pick in (
        ("rollguard", lambda g: [x.server for x in g.runs]),
        ("old stage", lambda g: g.baseline_server),
    ):
        for n, g in sorted(r.groups.items()):
            if pick(g):
                c = median_counts(pick(g))
                server_rows.append([label, n, *(c.get(v, 0) for v in SERVER_VERBS), sum(c.values())])
    if server_rows:
        out += [
            "Server side by verb, successful rollouts (all clients, so the controllers' work included):",
            "",
        ]
        out += table(["run", "N", *SERVER_VERBS, "total"], server_rows)
    points = [
        (n, sum(median_counts([x.own for x in g.runs]).values()))
        for n, g in sorted(r.groups.items())
        if g.runs
    ]
    a, b = fit(points)
    slopes = own_slopes(r)
    per_verb = ", ".join(f"{v} {k:.2f}" for v, k in slopes.items() if k > 0.05)
    if len(points) >= 2:
        per = {n: y / n for n, y in points}
        lo, hi = min(per), max(per)
        out.append(
            f"**Growth**: rollguard's own requests per successful rollout fit {a:.0f} + {b:.2f} N (least squares "
            f"over N = {', '.join(str(n) for n, _ in points)}); per workload {per[lo]:.1f} at N={lo} and "
            f"{per[hi]:.1f} at N={hi}: "
            + ("linear (a fixed part plus a constant per workload), not faster." if per[hi] <= per[lo] * 1.1
               else "per-workload cost grows with N: look into it.")
            + f" Per added workload, by verb: {per_verb}{explain(slopes)}."
        )  # fmt: skip
        out += ["", *growth_by_verb(r)]
        watches = [
            median_counts([x.own for x in g.runs]).get("watch", 0)
            for _, g in sorted(r.groups.items())
            if g.runs
        ]
        gets = [
            sum(median_counts([x.own for x in g.runs]).get(v, 0) for v in ("get", "list"))
            for _, g in sorted(r.groups.items())
            if g.runs
        ]
        flat = max(gets) - min(gets) <= 5
        out.append(
            f"**Watches, not polling**: {min(watches)}-{max(watches)} watch streams per run for N from {lo} to "
            f"{hi} (one per resource: the workloads and revisions of each kind present, and pods), and "
            f"{min(gets)}-{max(gets)} gets and lists per run over the same range: "
            + ("a fixed part (preflight, lock, journal, each watch's first list), so waiting costs no reads: "
               "progress arrives as watch events." if flat
               else "reads grow with N: look for a polling loop.")
        )  # fmt: skip
    if meta.idle_rate:
        idle = ", ".join(f"{v} {c:.1f}/s" for v, c in meta.idle_rate.most_common())
        out.append(
            f"Background: the sandbox's own traffic with no client running, for 10 s right after the set-up "
            f"(its controllers may still be settling): {idle}."
        )
    return [*out, ""]


def growth_by_verb(r: RolloutResults) -> list[str]:
    """The least-squares fit of rollguard's own requests over N, by verb: the fixed part and what each
    added workload costs, for successful rollouts and for the crash-and-revert path."""
    paths = [("successful rollout", {n: g.runs for n, g in r.groups.items()}),
             ("crash and revert", {n: f.runs for n, f in r.fails.items()})]  # fmt: skip
    rows = []
    for label, runs in paths:
        if len([x for x in runs.values() if x]) < 2:
            continue
        found = fits(runs)
        for verb in (*OWN_VERBS, "total"):
            a, b = found[verb]
            if verb == "total" or abs(a) >= 0.05 or abs(b) >= 0.005:
                rows.append([label, f"**{verb}**" if verb == "total" else verb, f"{a:.1f}", f"{b:.2f}"])
    if not rows:
        return []
    sizes = sorted(n for n, g in r.groups.items() if g.runs)
    renewed = ", ".join(
        f"N={n}: {med([x.renewals for x in g.runs]):.0f}" for n, g in sorted(r.groups.items()) if g.runs
    )
    return [
        f"Growth fit by verb (least squares over N = {', '.join(map(str, sizes))}; requests = fixed part + "
        "per added workload x N), less the Lease renewals, which come with the run's length, not its size (one "
        f"PUT per third of the lease; median per successful run: {renewed}):",
        "",
        *table(["path", "verb", "fixed part", "per added workload"], rows),
    ]


def section_reads(reads: ReadResults) -> list[str]:
    out = [
        "## 4. Scale of reads",
        "",
        f"Workloads spread over {SCALE_NAMESPACES} namespaces (half DCs, half Deployments, one in ten with 1 "
        "replica, the rest with 0), labelled `bench=scale`; 300 first, then grown to 1000. Time of the "
        "`rollguard` process (start-up included); requests counted in its client.",
        "",
    ]
    rows = []
    for row in reads.rows:
        own = median_counts([x.own for x in row.runs])
        rows.append([row.command, row.workloads, row.wall.fmt(), sum(own.values()) if row.runs else "n/a",
                     ", ".join(f"{k} {v}" for k, v in sorted(own.items())) or "n/a"])  # fmt: skip
    if reads.tui_first.n:
        rows.append(["TUI first screen (after the data arrived)", 300, reads.tui_first.fmt("s", 3), "-",
                     "fixture data in an in-memory API (bench/tui_bench.py)"])  # fmt: skip
        rows.append(["TUI keypress `down` (median of 40 presses)", 300, reads.tui_key.fmt("s", 3), "-", "-"])
    else:
        why = reads.tui_missing or "the TUI benchmark was not run"
        rows.append(["TUI first screen", 300, f"not measured yet: {why}", "", ""])
    out += table(["command", "workloads", "time", "requests", "by verb"], rows)
    if reads.created:
        made = ", ".join(f"{n}: {s:.0f} s" for n, s in sorted(reads.created.items()))
        out += [
            f"Creating the workloads and waiting for their first revision objects (not part of the reads): {made}.",
            "",
        ]
    if reads.tui_output:
        out += ["`bench/tui_bench.py` printed (last run):", "", "```", reads.tui_output, "```", ""]
    return out


def section_startup(reads: ReadResults) -> list[str]:
    out = [
        "## 5. Start-up",
        "",
        "Process time of the installed `rollguard` script, from spawn to exit, from compiled bytecode "
        "as `pip install` leaves it (`bench.metrics.bytecode_env`); for a command that talks to the cluster, "
        "also the time until its first request is handed to the transport (the same command started "
        "through `bench.counted`, which stamps it): the start-up proper, before the server has any say.",
        "",
    ]
    rows = []
    for label, stats in reads.startup.items():
        heavy = ", ".join(f"`{m}` {ms:.0f} ms" for m, ms in reads.imports.get(label, [])[:4])
        first = reads.first_request.get(label)
        rows.append([f"`{label}`", stats.fmt(), first.fmt() if first and first.n else "n/a", heavy or "n/a"])
    header = ["command", "whole process", "until the first request", "heaviest imports (-X importtime)"]
    out += table(header, rows)
    if reads.interpreter.n:
        out += [
            f"The interpreter alone, same environment: `python -c pass` {reads.interpreter.fmt('s', 3)}; "
            f"`python -S -c pass` {reads.bare_interpreter.fmt('s', 3)} (without site, i.e. without the "
            "environment's .pth files; this tree's editable install adds setuptools' import hook there, which "
            "an install of the wheel has not).",
            "",
        ]
    return out
