"""`python -m bench`: start a fresh sandbox, run the benchmark cases, write docs/BENCHMARKS.md.

The sandbox (free port, temporary directory) is always torn down, on errors and SIGTERM too. Slowness
never fails the run: a case that breaks is reported in the document and the next case goes on.
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench import cases, reads, table, verify
from bench.context import Ctx, say
from bench.doc import big_section, render, splice
from bench.metrics import by_verb, loadavg, machine, scrape
from sandbox import cluster

BUDGET = 14 * 60.0  # `make bench` should stay under ~15 minutes on a 2-core machine
IDLE_WINDOW = 10.0


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--out", default="docs/BENCHMARKS.md", help="where to write the document")
    p.add_argument("--quick", action="store_true", help="smoke run: N in {1, 5}, 60 workloads to read")
    p.add_argument(
        "--only",
        type=only_cases,
        help=f"comma-separated cases to run alone ({', '.join(ONLY)}; rollouts without the old stage, whose "
        "runs take minutes), plus the limit they are compared with; write --out elsewhere than "
        "docs/BENCHMARKS.md, whose figures come from one whole run",
    )
    p.add_argument(
        "--sizes",
        type=lambda text: tuple(int(n) for n in text.split(",")),
        help=f"with --only: the group sizes N, comma-separated, of {', '.join(map(str, cases.SIZES))} "
        "(default: all of them; 20 for manifests or verify alone)",
    )
    p.add_argument("--budget", type=float, default=BUDGET, help="seconds; optional repetitions stop past it")
    args = p.parse_args(argv)
    if args.only and Path(args.out).resolve() == Path("docs/BENCHMARKS.md").resolve():
        p.error("--only writes a partial document: give --out elsewhere than docs/BENCHMARKS.md")
    if args.sizes and (not args.only or any(n not in cases.SIZES for n in args.sizes)):
        p.error(f"--sizes goes with --only and takes N of {', '.join(map(str, cases.SIZES))}")
    return args


ONLY = ("rollouts", "failures", "repairs", "manifests", "verify", "startup", "reads")


def only_cases(text: str) -> tuple[str, ...]:
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [c for c in chosen if c not in ONLY]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"unknown case(s) {unknown or text!r}; choose from {', '.join(ONLY)}"
        )
    return chosen


def start_sandbox(
    log: Callable[[str], None], *, apiserver_args: Sequence[str] = ()
) -> tuple[cluster.Sandbox, Path]:
    d = Path(tempfile.mkdtemp(prefix="rollguard-bench-"))
    atexit.register(stop_sandbox, d)  # backstop should anything below escape the finally
    for attempt in range(3):
        try:
            return cluster.up(d, cluster.free_port(), log=log, apiserver_args=apiserver_args), d
        except cluster.PortInUse:  # someone took the port between the check and the start
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def stop_sandbox(d: Path) -> None:
    if d.exists():
        cluster.down(d)
        shutil.rmtree(d, ignore_errors=True)


def exe_name() -> str:
    """The interpreter as the command line named it (``.venv/bin/python`` under `make bench`)."""
    try:
        return str(Path(sys.executable).relative_to(Path.cwd()))
    except ValueError:
        return sys.executable


def idle_rate(ctx: Ctx) -> Counter[str]:
    """The idle sandbox's own requests per second (controllers, kubelet), to read the server columns by."""
    before = scrape(ctx.sb)
    time.sleep(IDLE_WINDOW)
    return Counter({v: c / IDLE_WINDOW for v, c in by_verb(before, scrape(ctx.sb)).items()})


def guarded(meta: table.Meta, name: str, step: Callable[[], Any]) -> None:
    """Run one step; a failure becomes a "not measured" line instead of ending the benchmark."""
    try:
        step()
    except Exception as exc:
        say(f"{name} failed:\n{traceback.format_exc()}")
        meta.skipped.append(f"{name}: not measured: {type(exc).__name__}: {exc}")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    # SIGTERM (e.g. a CI timeout) must still run the finally below and stop the sandbox.
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    command = " ".join([exe_name(), "-m", "bench", *(sys.argv[1:] if argv is None else argv)])
    meta = table.Meta(command=command, machine=machine(), load_start=loadavg())
    if args.quick:
        sizes: tuple[int, ...] = (1, 5)
    elif args.only:
        alone = set(args.only) <= {"manifests", "verify"}  # each on the group of 20 only
        sizes = args.sizes or ((cases.MANIFEST_SIZE,) if alone else cases.SIZES)
    else:
        sizes = cases.SIZES
    scale = (30, 60) if args.quick else reads.SCALE
    started = time.monotonic()
    rollouts, read_results = cases.RolloutResults(), reads.ReadResults()
    say(f"starting a sandbox (load average {meta.load_start})")
    sb, d = start_sandbox(say)
    try:
        meta.sandbox = f"API server on 127.0.0.1:{sb.port}, started in {time.monotonic() - started:.0f} s"
        ctx = Ctx(sb=sb, tmp=d / "bench", started=started, budget=args.budget, log=say, quick=args.quick)
        ctx.tmp.mkdir()
        t0 = time.monotonic()
        guarded(meta, "set-up of the groups", lambda: cases.setup(ctx, rollouts, sizes))
        rollouts.setup_seconds = time.monotonic() - t0
        say(f"groups created in {rollouts.setup_seconds:.0f} s")

        def idle() -> None:
            meta.idle_rate = idle_rate(ctx)

        guarded(meta, "idle traffic", idle)
        guarded(meta, "case 1: limit", lambda: cases.measure_limit(ctx, rollouts))

        def checked() -> None:
            rollouts.verify = verify.verify_overhead(ctx, rollouts.current, sizes)

        wanted = set(args.only or ONLY)
        old_stage = not args.only  # its runs take minutes: only in the whole benchmark
        if "rollouts" in wanted:
            guarded(meta, "case 1: group rollouts",
                    lambda: cases.group_rollouts(ctx, rollouts, sizes, old_stage=old_stage))  # fmt: skip
        if "failures" in wanted:
            guarded(meta, "case 2: failures", lambda: cases.failures(ctx, rollouts, sizes))
            if not args.only:
                guarded(meta, "case 2: --no-fail-fast", lambda: cases.no_fail_fast(ctx, rollouts, sizes))
        if "repairs" in wanted:
            guarded(meta, "repairs", lambda: cases.repairs(ctx, rollouts, sizes))
        if "manifests" in wanted:
            guarded(meta, "manifest rollout", lambda: cases.manifest_rollouts(ctx, rollouts, sizes))
        if "verify" in wanted:
            guarded(meta, "--verify overhead", checked)
        if "startup" in wanted:
            small = cases.namespace(sizes[1] if len(sizes) > 1 else sizes[0])
            guarded(meta, "case 5: start-up", lambda: reads.startup(ctx, read_results, small))
        if "reads" in wanted:
            guarded(meta, "case 4: scale of reads", lambda: reads.scale_reads(ctx, read_results, scale))
    finally:
        say("stopping the sandbox")
        stop_sandbox(d)
    return finish(meta, args, rollouts, read_results, started, d)


def finish(
    meta: table.Meta,
    args: argparse.Namespace,
    rollouts: cases.RolloutResults,
    read_results: reads.ReadResults,
    started: float,
    d: Path,
) -> int:
    stop_sandbox(d)  # idempotent: gone already after a whole run
    meta.seconds = time.monotonic() - started
    meta.load_end = loadavg()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    kept = big_section(out.read_text()) if out.exists() else ""  # `make bench-big`'s part stays
    out.write_text(splice(render(meta, rollouts, read_results, quick=args.quick), kept))
    say(f"wrote {out} ({meta.seconds / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
