"""`python -m bench.big` (`make bench-big`, also run by `make bench`): reads on a big cluster.

Builds the cluster of `bench.bigcluster` in a fresh sandbox (controllers stopped, objects written into
etcd), first 1,000 workloads, then all 10,000, and measures per command wall time, rollguard's own API
requests and the process's peak RSS (its own VmHWM), each with its goal beside it; then
the TUI's first screen on the whole cluster (`bench.tui_big`) and a cluster command's start-up. The
figures replace the big-cluster section of docs/BENCHMARKS.md (the rest of the file is `make bench`'s).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import bigcluster
from bench.__main__ import exe_name, start_sandbox, stop_sandbox
from bench.context import say
from bench.counted import Split, split
from bench.doc import BIG_BEGIN, BIG_END, splice
from bench.metrics import bytecode_env, loadavg, machine
from sandbox import cluster

GOAL_RSS_MIB = 150.0
GOAL_TUI_S = 3.0
GOAL_TUI_LIVE_S = 5.0  # a change made by another client on its row: the TUI keeps up with events
GOAL_START_S = 0.25
REPS = 2
STARTUP_REPS = 9
BIG_REPS = 1  # at 10,000 workloads a cluster-wide read takes minutes on the shared machine


@dataclass
class Measured:
    """One command: wall seconds, own requests by verb, peak RSS (MiB), exit code, per run."""

    label: str
    args: list[str]
    goal: str = ""
    seconds: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)
    requests: dict[str, int] = field(default_factory=dict)
    code: int | None = None
    note: str = ""
    splits: list[Split] = field(default_factory=list)  # start-up / waiting for the server / the rest


def measure(
    label: str,
    args: list[str],
    kubeconfig: str,
    tmp: Path,
    *,
    goal: str = "",
    reps: int = REPS,
    env: dict[str, str] | None = None,
) -> Measured:
    """Run ``rollguard ARGS`` (through bench.counted) ``reps`` times as a child process; wait4 gives its RSS."""
    m = Measured(label, args, goal)
    child_env = {**os.environ, **(env or {})}
    for i in range(reps):
        counts = tmp / f"counts-{label.replace(' ', '_')}-{i}.json"
        out = tmp / "out.txt"
        argv = [sys.executable, "-m", "bench.counted", str(counts), *args, "--kubeconfig", kubeconfig]
        t0 = time.monotonic()  # the clock bench.counted stamps the first request with
        with open(out, "w") as f:
            proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, env=child_env)
            _, status, _usage = os.wait4(proc.pid, 0)
        t1 = time.monotonic()
        m.seconds.append(t1 - t0)
        if (parts := split(str(counts), t0, t1)) is not None:
            m.splits.append(parts)
        # VmHWM of the rollguard process itself (ru_maxrss would carry this parent's RSS over the fork)
        with contextlib.suppress(OSError, ValueError):
            m.rss.append(int(Path(f"{counts}.rss").read_text()) / 1024)
        m.code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(OSError, ValueError):
            m.requests = json.loads(counts.read_text())
        if m.code not in (0, 1):
            m.note = f"exit {m.code}: " + " | ".join(out.read_text(errors="replace").splitlines()[-3:])[:300]
    say(f"{label}: {fmt(m.seconds, 's')} {fmt(m.rss, 'MiB', 0)} {m.requests} exit {m.code}")
    return m


def fmt(values: list[float], unit: str, digits: int = 2) -> str:
    if not values:
        return "n/a"
    mid = (
        sorted(values)[len(values) // 2]
        if len(values) % 2
        else sum(sorted(values)[len(values) // 2 - 1 :][:2]) / 2
    )
    spread = f" ({min(values):.{digits}f}-{max(values):.{digits}f})" if len(values) > 1 else ""
    return f"{mid:.{digits}f} {unit}{spread}"


def _count(sb: cluster.Sandbox, path: str) -> int:
    """Objects behind a list path (``limit=1`` and the server's remainingItemCount)."""
    import ssl

    ctx = ssl.create_default_context(cafile=str(sb.ca))
    req = urllib.request.Request(
        f"{sb.server}{path}?limit=1", headers={"Authorization": f"Bearer {cluster.ADMIN_TOKEN}"}
    )
    with urllib.request.urlopen(req, context=ctx, timeout=60) as resp:
        data = json.loads(resp.read())
    return len(data.get("items", [])) + int(data.get("metadata", {}).get("remainingItemCount") or 0)


PATHS = {
    "DeploymentConfigs": "/apis/apps.openshift.io/v1/deploymentconfigs",
    "Deployments": "/apis/apps/v1/deployments",
    "ReplicationControllers": "/api/v1/replicationcontrollers",
    "ReplicaSets": "/apis/apps/v1/replicasets",
    "Pods": "/api/v1/pods",
}


def build(sb: cluster.Sandbox, namespaces: range, kubeconfig: str) -> dict[str, Any]:
    from rollguard.cluster.client import Client
    from rollguard.core.errors import Conflict
    from rollguard.core.resources import NAMESPACES

    client = Client.connect(kubeconfig=kubeconfig)
    for i in namespaces:
        with contextlib.suppress(Conflict):  # 409 AlreadyExists
            client.create(NAMESPACES, bigcluster.namespace_body(i))
    t0 = time.monotonic()
    sizes = bigcluster.write(f"http://127.0.0.1:{sb.port + 10000}", namespaces)
    counts = {kind: _count(sb, path) for kind, path in PATHS.items()}
    return {"seconds": time.monotonic() - t0, "sizes": sizes, "counts": counts}


def tui_first_screen(kubeconfig: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "bench.tui_big", "--kubeconfig", kubeconfig]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    wall = time.perf_counter() - t0
    try:
        data: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        data = {"error": (err or out).strip().splitlines()[-3:]}
    data["process_s"] = wall
    say(f"TUI: {data}")
    return data


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.big", description=__doc__)
    p.add_argument("--out", default="docs/BENCHMARKS.md")
    p.add_argument(
        "--namespaces", type=int, default=bigcluster.NAMESPACES, help="smoke runs: fewer (100 workloads each)"
    )
    args = p.parse_args(argv)
    small, rest = (
        range(0, max(1, args.namespaces // 10)),
        range(max(1, args.namespaces // 10), args.namespaces),
    )
    started = time.monotonic()
    load_start, uptime_start = loadavg(), _uptime()
    say(f"starting a sandbox ({uptime_start})")
    # Without its watch cache the API server keeps no decoded copy of 90,000 objects (on this shared
    # machine it grew past 15 GB with it); every list is read from etcd either way (paginated lists
    # without a resourceVersion always are).
    sb, d = start_sandbox(say, apiserver_args=["--watch-cache=false"])
    results: dict[str, Any] = {"small": {}, "big": {}}
    try:
        cluster.down(d, say, only=("openshift", "kubelet", "kcm"))  # nothing may re-sync what is written
        kubeconfig = str(sb.kubeconfig)
        tmp = Path(tempfile.mkdtemp(prefix="bench-big-", dir=d))
        results["build_small"] = build(sb, small, kubeconfig)
        say(f"1,000 workloads built: {results['build_small']}")
        for label, cmd in (("status -A", ["status", "-A"]), ("drift-check -A", ["drift-check", "-A"])):
            results["small"][label] = measure(label, cmd, kubeconfig, tmp)
        if len(small) > 1:  # bench.tui_big changes a workload of the second namespace
            results["tui_small"] = tui_first_screen(kubeconfig)
        results["build_big"] = build(sb, rest, kubeconfig)
        say(f"10,000 workloads built: {results['build_big']}")
        ten = [
            a
            for i in range(0, args.namespaces, max(1, args.namespaces // 10))
            for a in ("-n", bigcluster.namespace(i))
        ]
        cases = [
            ("status -A", ["status", "-A"], "memory bounded by the report"),
            ("drift-check -A", ["drift-check", "-A"], f"peak RSS < {GOAL_RSS_MIB:.0f} MiB"),
            ("drift-check -n x10", ["drift-check", *ten], "a tenth of -A"),
            ("status -A -l shard=s07 (1%)", ["status", "-A", "-l", "shard=s07"], "about 1% of -A"),
        ]
        for label, cmd, goal in cases:
            results["big"][label] = measure(label, cmd, kubeconfig, tmp, goal=goal, reps=BIG_REPS)
        results["tui"] = tui_first_screen(kubeconfig)
        installed = bytecode_env(tmp / "pycache")  # compiled, as pip installs the wheel
        measure("warm-up", ["status", "-n", "default"], kubeconfig, tmp, reps=1, env=installed)
        settled = settle(d)
        cpu, t0, load = sandbox_cpu(d), time.monotonic(), loadavg()
        results["startup"] = measure(
            "status -n (empty namespace)", ["status", "-n", "default"], kubeconfig, tmp, reps=STARTUP_REPS,
            goal=f"< {GOAL_START_S} s", env=installed,
        )  # fmt: skip
        results["startup_context"] = (settled, (sandbox_cpu(d) - cpu) / (time.monotonic() - t0), load)
    finally:
        stop_sandbox(d)
    results["seconds"] = time.monotonic() - started
    results["load"] = (load_start, loadavg())
    results["uptime"] = (uptime_start, _uptime())
    results["command"] = " ".join([exe_name(), "-m", "bench.big", *(sys.argv[1:] if argv is None else argv)])
    out = Path(args.out)
    block = f"{BIG_BEGIN}\n{render(results).rstrip()}\n{BIG_END}\n"
    out.write_text(splice(out.read_text() if out.exists() else "", block))
    say(f"wrote {out} ({results['seconds'] / 60:.1f} min)")
    return 0


def sandbox_cpu(d: Path) -> float:
    """CPU seconds (user and system) the sandbox's live processes have used so far (/proc/PID/stat)."""
    ticks = 0
    for _name, pid, alive in cluster.status(d):
        if pid and alive:
            with contextlib.suppress(OSError, ValueError, IndexError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                ticks += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of proc(5)
    return ticks / os.sysconf("SC_CLK_TCK")


def settle(d: Path, *, share: float = 0.1, longest: float = 30.0) -> float:
    """Wait until the sandbox uses under ``share`` of a core over a second (at most ``longest`` s); the
    seconds waited. After the cluster-wide cases and the TUI, etcd and the API server stay busy for a
    while (compaction, garbage collection): measured then, the start-up of a small command would carry
    their aftermath on the shared cores (0.31 s once, 0.19 s a minute later on the same cluster)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < longest:
        before = sandbox_cpu(d)
        time.sleep(1.0)
        if sandbox_cpu(d) - before < share:
            break
    return time.monotonic() - t0


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return f"load average {loadavg()}"


def _mib(values: list[float]) -> float:
    return max(values) if values else float("nan")


def render(r: dict[str, Any]) -> str:
    m = machine()
    counts = r.get("build_big", {}).get("counts", {})
    sizes = r.get("build_big", {}).get("sizes", {})
    lines = [
        "## Big cluster (`make bench-big`)",
        "",
        f"`{r['command']}` on {m['date']}, {r['seconds'] / 60:.1f} min in all; {m['cores']} cores, {m['memory']}. "
        f"Machine load (`uptime`) at the start: `{r['uptime'][0]}`; at the end: `{r['uptime'][1]}`. The machine is "
        "shared with other agents' test runs: absolute times are noisy, memory and request counts are not.",
        "",
        "The cluster (`bench/bigcluster.py`), written straight into etcd of a fresh sandbox whose controllers "
        "are stopped first (nothing re-syncs or runs it): "
        + ", ".join(f"{n:,} {kind}" for kind, n in counts.items())
        + " over 100 namespaces; 1 pod in 5 Running, the rest Pending (bound to nodes nobody serves, "
        "ContainerCreating); one journal per namespace. Mean JSON size as written (managedFields, last-applied "
        "annotations and the RCs' encoded DCs included): "
        + ", ".join(f"{kind} {v['mean_bytes'] / 1024:.1f} KiB" for kind, v in sizes.items())
        + f". Written in {r.get('build_big', {}).get('seconds', 0) + r.get('build_small', {}).get('seconds', 0):.0f} s "
        "(not measured, part of no test).",
        "",
        "Each command runs as its own process (`python -m bench.counted`, rollguard's CLI plus a request "
        f"counter); cells: median (min-max) of {REPS} runs at 1,000 workloads, {BIG_REPS} at 10,000; peak RSS is the process's own high-water mark (VmHWM).",
        "",
        "| command | workloads | wall time | rollguard's requests | peak RSS | goal | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for size, key in (("1,000", "small"), ("10,000", "big")):
        for label, mm in r[key].items():
            verdict = _verdict(label, mm, r)
            reqs = ", ".join(f"{v} {k}" for k, v in sorted(mm.requests.items())) or "n/a"
            lines.append(
                f"| `rollguard {' '.join(mm.args) if 'x10' not in label else 'drift-check -n NS (x10)'}` | {size} | "
                f"{fmt(mm.seconds, 's')} | {reqs} | {fmt(mm.rss, 'MiB', 0)} | {mm.goal or 'growth'} | {verdict} |"
            )
    lines += ["", *growth(r), "", *tui_lines(r.get("tui", {}), r.get("tui_small")), "", *startup_lines(r)]
    notes = [mm.note for k in ("small", "big") for mm in r[k].values() if mm.note]
    if notes:
        lines += ["", "Problems:", *[f"- {n}" for n in notes]]
    return "\n".join(lines) + "\n"


def _verdict(label: str, mm: Measured, r: dict[str, Any]) -> str:
    if mm.note:
        return "failed"
    if label == "drift-check -A" and mm.goal:
        return "met" if _mib(mm.rss) < GOAL_RSS_MIB else "missed"
    full = r["big"].get("status -A") if label != "status -A" else None
    if label.startswith("status -A -l") and full and full.seconds:
        share = sum(mm.requests.values()) / max(sum(full.requests.values()), 1)
        return f"{share * 100:.1f}% of -A's requests, {_mib(mm.rss) / max(_mib(full.rss), 1) * 100:.0f}% of its RSS"
    if "x10" in label and full:
        return f"{sum(mm.seconds) / max(sum(full.seconds), 1e-9) * 100:.0f}% of -A's time"
    return ""


def growth(r: dict[str, Any]) -> list[str]:
    out = ["Growth from 1,000 to 10,000 workloads (10x the objects):", ""]
    for label in ("status -A", "drift-check -A"):
        a, b = r["small"].get(label), r["big"].get(label)
        if not a or not b or not a.seconds or not b.seconds:
            continue
        t = (sum(b.seconds) / len(b.seconds)) / max(sum(a.seconds) / len(a.seconds), 1e-9)
        reqs = sum(b.requests.values()) / max(sum(a.requests.values()), 1)
        rss = _mib(b.rss) / max(_mib(a.rss), 1e-9)
        out.append(f"- `{label}`: time x{t:.1f}, requests x{reqs:.1f}, peak RSS x{rss:.2f} "
                   f"({_mib(a.rss):.0f} -> {_mib(b.rss):.0f} MiB)")  # fmt: skip
    return out


def tui_lines(t: dict[str, Any], small: dict[str, Any] | None = None) -> list[str]:
    if "first_screen_s" not in t:
        return [f"TUI `rollguard tui -A`: not measured: {t.get('error', t)}"]
    verdict = "met" if t["first_screen_s"] <= GOAL_TUI_S else "missed"
    nan = float("nan")
    rss = t.get("rss_mib", nan)
    rss_verdict = "met" if rss < GOAL_RSS_MIB else "missed"
    lags = [t.get("live_refresh_s", nan), t.get("live_image_s", nan)]
    live_verdict = "met" if all(lag <= GOAL_TUI_LIVE_S for lag in lags) else "missed"
    grown = (
        f" (x{rss / small['rss_mib']:.2f} from {small['rss_mib']:.0f} MiB at 1,000 workloads)"
        if small and small.get("rss_mib")
        else ""
    )
    return [
        f"TUI `rollguard tui -A` on the 10,000 workloads (headless, `bench/tui_big.py`): **first screen "
        f"{t['first_screen_s']:.2f} s** after start (goal <= {GOAL_TUI_S:.0f} s: {verdict}; {t.get('rows_first', '?')} rows on it), "
        f"the whole table of {t.get('rows', '?')} rows after {t.get('all_rows_s', nan):.2f} s, watches live after "
        f"{t.get('live_s', nan):.2f} s; live changes through the API on their rows: one Deployment paused "
        f"{lags[0]:.2f} s later, one DeploymentConfig's image {lags[1]:.2f} s later (goal: each within "
        f"{GOAL_TUI_LIVE_S:.0f} s: {live_verdict}); a re-judgement of every namespace (the clock tick's) "
        f"{t.get('everything_s') or nan:.2f} s; **peak RSS {rss:.0f} MiB**{grown}, {t.get('rss_table_mib', nan):.0f} MiB "
        f"when the whole table was shown, of which the backend's caches, states and rows hold "
        f"{t.get('held_mib', nan):.0f} MiB (the rest: imports, the table's widgets, transient) (goal: bounded like the commands, "
        f"< {GOAL_RSS_MIB:.0f} MiB: {rss_verdict}); requests {t.get('requests', {})}."
        + (
            f" Not measured further: {t['incomplete']} (the 540 s budget of bench/tui_big.py)."
            if t.get("incomplete")
            else ""
        ),
    ]


def startup_lines(r: dict[str, Any]) -> list[str]:
    s: Measured | None = r.get("startup")
    if s is None or not s.seconds:
        return []
    line = (
        f"Start-up of a command that talks to the cluster (`rollguard status -n default`, "
        f"{sum(s.requests.values())} small requests, "
        f"whole process, from compiled bytecode as `pip install` leaves it, started through `bench.counted`): "
        f"{fmt(s.seconds, 's')} in all (peak RSS {fmt(s.rss, 'MiB', 0)})"
    )
    if not s.splits:  # an older bench.counted, or no request sent: only the whole process
        verdict = "met" if min(s.seconds) < GOAL_START_S else "missed"
        return [f"{line} (goal < {GOAL_START_S} s: {verdict} at best)."]
    startup = [p.startup_s for p in s.splits]
    verdict = "met" if sorted(startup)[len(startup) // 2] < GOAL_START_S else "missed"
    context = ""
    if r.get("startup_context"):
        settled, busy, load = r["startup_context"]
        context = (
            f" Measured once the sandbox had settled ({settled:.0f} s after the previous case; its processes "
            f"then used {busy:.0%} of a core during these runs; load average {load})."
        )
    return [
        f"{line}: **until the first request is sent {fmt(startup, 's')}** (interpreter, imports, kubeconfig, "
        f"parser: the start-up the goal names, < {GOAL_START_S} s: {verdict}), waiting for the server's "
        f"answers {fmt([p.waited_s for p in s.splits], 's')} (without the watch cache every list is read "
        f"from etcd, which holds the whole big cluster), the rest (reading, assessing, printing, exit) "
        f"{fmt([p.rest_s for p in s.splits], 's')}.{context}",
    ]


if __name__ == "__main__":
    sys.exit(main())
