"""The cost of a passing HTTP check (`rollout --verify`, issue 25) on the group of 20.

Each repetition rolls the group out twice, interleaved so that load drifts hit both alike: once with
``--image`` only, once with the same kind of change and ``--verify`` holding one http check (one
success needed) of a server this process serves on 127.0.0.1. A rollout of 20 on a shared machine varies
by seconds from run to run, far more than the overhead, so the overhead is measured on the run's own
clock (its progress lines): from the last workload judged complete to the success line, with the check
less the same span without it, less the check's own duration as its report says it (the time its
requests took). What remains is what verifying adds around the check itself (the journal's `verifying`
write, starting and joining the check's thread). The wall times are shown beside. Goal: under 0.5 s.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from bench.context import Ctx
from bench.metrics import Stats

_STAMP = re.compile(r"^\[\s*([\d.]+)s\] (.*)$")
VERIFY_SIZE = 20
VERIFY_REPS = 3
GOAL = 0.5


@dataclass
class VerifyResult:
    n: int
    plain: Stats = field(default_factory=Stats)
    checked: Stats = field(default_factory=Stats)
    check: Stats = field(default_factory=Stats)  # the check's own duration (report checks[0].duration)
    plain_tail: Stats = field(default_factory=Stats)  # last "complete" to "succeeded", run's own clock
    checked_tail: Stats = field(default_factory=Stats)
    overhead: Stats = field(default_factory=Stats)  # checked_tail - plain_tail - check, per pair of runs
    problems: list[str] = field(default_factory=list)


def tail_seconds(stdout: str) -> float | None:
    """On the run's own clock: from the last workload judged complete to the success line."""
    complete = succeeded = None
    for line in stdout.splitlines():
        m = _STAMP.match(line)
        if m is None:
            continue
        if ": complete: " in m[2]:
            complete = float(m[1])
        elif m[2].startswith("succeeded: "):
            succeeded = float(m[1])
    return succeeded - complete if complete is not None and succeeded is not None else None


@contextmanager
def healthy_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/health"
    finally:
        server.shutdown()
        server.server_close()


def verify_overhead(ctx: Ctx, current: dict[str, str], sizes: tuple[int, ...]) -> VerifyResult:
    from bench.cases import image_args, namespace

    n = VERIFY_SIZE if VERIFY_SIZE in sizes else sizes[-1]
    ns, result = namespace(n), VerifyResult(n)
    with healthy_server() as url:
        checks = ctx.tmp / "checks.yaml"
        checks.write_text(f'checks:\n  - name: health\n    timeout: 60s\n    http: {{url: "{url}"}}\n')
        for _rep in ctx.reps(VERIFY_REPS, 0.95):
            base = ["rollout", "-n", ns, "-l", "app=bench"]
            plain = ctx.rollguard([*base, *image_args(n, image := ctx.image())])
            if plain.status == "succeeded":
                current[ns] = image
            checked = ctx.rollguard([*base, *image_args(n, image := ctx.image()), "--verify", str(checks)])
            if checked.status == "succeeded":
                current[ns] = image
            reported = (checked.report.get("checks") or [{}])[0]
            if (
                plain.status != "succeeded"
                or checked.status != "succeeded"
                or reported.get("outcome") != "passed"
            ):
                result.problems.append(
                    f"runs ended {plain.status} / {checked.status} (check {reported.get('outcome')}): "
                    f"{checked.proc.tail()}"
                )
                continue
            own = float(reported.get("duration") or 0.0)
            result.plain.add(plain.seconds)
            result.checked.add(checked.seconds)
            result.check.add(own)
            spans = tail_seconds(plain.proc.stdout), tail_seconds(checked.proc.stdout)
            if spans[0] is None or spans[1] is None:
                result.problems.append("a run's progress lines did not say when it completed and succeeded")
                continue
            result.plain_tail.add(spans[0])
            result.checked_tail.add(spans[1])
            result.overhead.add(spans[1] - spans[0] - own)
    ctx.log(f"N={n}: --verify http overhead {result.overhead.fmt()} (check itself {result.check.fmt()})")
    return result


def section(result: VerifyResult | None) -> list[str]:
    if result is None:
        return []
    from bench.table import table

    met = "met" if result.overhead.n and result.overhead.median < GOAL else "not met"
    out = [
        "### Post-rollout check overhead (issue 25)",
        "",
        f"On the group of {result.n}: the same rollout with `--image` only and with `--verify` holding one "
        "http check (one 200 needed) of a server on 127.0.0.1, interleaved. Overhead, on the run's own clock: "
        "from the last workload complete to the success line with the check, less the same span without it, "
        f"less the check's own duration from its report (goal: < {GOAL} s: {met}; the progress clock counts "
        "tenths of a second).",
        "",
    ]
    out += table(
        ["workloads", "rollout (wall)", "with --verify (wall)", "complete to succeeded", "with --verify",
         "check's own duration", "overhead"],
        [[result.n, result.plain.fmt(), result.checked.fmt(), result.plain_tail.fmt(), result.checked_tail.fmt(),
          result.check.fmt(), result.overhead.fmt()]],
    )  # fmt: skip
    out += [f"- {p}" for p in result.problems]
    return out
