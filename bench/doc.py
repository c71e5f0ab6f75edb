"""The whole of docs/BENCHMARKS.md: top matter, the case sections from `bench.table`, what went wrong."""

from __future__ import annotations

from bench import table, verify
from bench.cases import BASELINE_REPS as OLD_REPS
from bench.cases import CRASH_REPS, LIMIT_REPS, REPAIR_REPS, ROLLGUARD_REPS, RolloutResults
from bench.reads import IMPORT_REPS, READ_REPS, STARTUP_REPS, ReadResults


def render(meta: table.Meta, r: RolloutResults, rd: ReadResults, *, quick: bool) -> str:
    m = meta.machine
    lines = [
        "# Benchmarks",
        "",
        f"Written by `make bench` on {m['date']}: `{meta.command}` "
        f"(whole run {meta.seconds / 60:.1f} min). Regenerate with `make bench`; the benchmark is not part of "
        "`make test`, and it never fails on slowness: what could not be measured is said below.",
        "",
    ]
    if quick:
        lines += ["> **Smoke run (`--quick`)**: small sizes and single repetitions; not the benchmark.", ""]
    load = f"load average {meta.load_start} at the start, {meta.load_end} at the end, on {m['cores']} cores"
    if _busy(meta.load_start, m["cores"]):
        lines += [
            f"> **Noisy numbers.** Something else ran on the machine when this run started ({load}). Ratios "
            "measured side by side are more robust than absolute times, but all of it should be re-run on a "
            "quiet machine.",
            "",
        ]
    else:
        lines += [f"No other test run shared the machine ({load}, the sandbox's own work included).", ""]
    lines += [
        "## Machine",
        "",
        *table.table(
            ["cores", "CPU", "memory", "Python", "kernel"],
            [[m["cores"], m["cpu"], m["memory"], m["python"], m["kernel"]]],
        ),
        "## Method",
        "",
        f"- A fresh sandbox of its own ({meta.sandbox}; etcd, kube-apiserver, kube-controller-manager, the "
        "stand-in kubelet and the OpenShift emulation) in a temporary directory, torn down at the end.",
        "- Each cell: **median (min-max, n=runs)**. Repetitions: limit "
        f"{LIMIT_REPS} per kind; rollguard rollouts and the floor {fmt_reps(ROLLGUARD_REPS)} each; old stage {fmt_reps(OLD_REPS)} "
        f"(one run of it at N=50 takes minutes); crash rollouts {fmt_reps(CRASH_REPS)}; repairs {REPAIR_REPS}; "
        f"reads {READ_REPS}; "
        f"start-up {STARTUP_REPS}. Fewer when the time budget ran out (n says how many).",
        "- rollguard runs as a process, exactly as `rollguard ...` (through `python -m bench.counted`, which "
        "adds a request counter and stamps when the last workload write was answered), from compiled bytecode "
        "as `pip install` leaves it (`bench.metrics.bytecode_env`); the other steps run in processes of their own (`python -m bench.drive`) so "
        "that no watch of one step stays open into the next one's request counts.",
        "",
    ]
    lines += table.headline(r, rd)
    lines += table.section_rollout(r)
    lines += table.section_failure(r)
    lines += table.section_repairs(r)
    lines += table.section_manifests(r)
    lines += verify.section(r.verify)
    lines += table.section_api(r, rd, meta)
    lines += table.section_reads(rd)
    lines += table.section_startup(rd)
    lines += lazy_imports(rd)
    problems = list(meta.skipped) + r.problems + rd.problems
    problems += [p for g in r.groups.values() for p in g.problems]
    problems += [p for f in r.fails.values() for p in f.problems]
    problems += r.no_fail_fast.problems if r.no_fail_fast else []
    problems += r.repairs.problems if r.repairs else []
    problems += r.verify.problems if r.verify else []
    problems += [f"{row.command} ({row.workloads}): {p}" for row in rd.rows for p in row.problems]
    lines += ["## Problems met during this run", ""]
    lines += [f"- {p}" for p in problems] or ["None."]
    return "\n".join(lines).rstrip() + "\n"


def fmt_reps(reps: dict[int, int]) -> str:
    return ", ".join(f"{n} at N={k}" for k, n in reps.items())


def lazy_imports(rd: ReadResults) -> list[str]:
    """Whether deferring an import would pay, from the -X importtime runs of this benchmark."""
    out = ["### Lazy imports", ""]
    for label, found in rd.imports.items():
        seconds = rd.import_seconds.get(label, 0.0)
        k8s = sum(ms for mod, ms in found if mod.split(".")[0] == "kubernetes")
        state = sum(ms for mod, ms in found if mod == "rollguard.state.assessment")
        if "--help" in label:
            out.append(
                f"- `{label}`: "
                + ("imports no `kubernetes` module (the subcommand handlers already import their dependencies "
                   "on use). " if not k8s else f"imports `kubernetes` ({k8s:.0f} ms): defer it to the handlers. ")
                + (f"Importing `rollguard.state.assessment` takes {state:.0f} ms (median of {IMPORT_REPS} runs under "
                   f"`-X importtime`, which itself slows imports down; the plain command takes "
                   f"{rd.startup[label].median:.2f} s). `drift-check`'s `register` needs it for the finding names "
                   "in its `--fail-on` help, so it cannot be deferred to a handler; moving those names out of "
                   "`rollguard.state.assessment` would save those milliseconds on a help screen: imperceptible, not done."
                   if state else "")
            )  # fmt: skip
        else:
            heavy = ", ".join(f"`{mod}` {ms:.0f} ms" for mod, ms in found[:3])
            out.append(
                f"- `{label}`: the heaviest imports are {heavy} (of the {seconds:.2f} s these runs took under "
                f"`-X importtime`, medians of {IMPORT_REPS}). rollguard keeps the official client "
                "for configuration (the kubeconfig and in-cluster loaders) and transport (`rest.RESTClientObject` "
                "on urllib3) but imports only those submodules, not the package's generated models, and not "
                "`requests` (the transport's proxy check) or `oauthlib`/`requests_oauthlib` (the OIDC refresh) "
                "until those paths run (`rollguard.cluster.k8s`); a command line naming a subcommand builds that "
                "subcommand's parser alone. What remains is mostly urllib3 with ssl and http.client (any HTTPS "
                "client needs them) and PyYAML for the kubeconfig file. The console script (`rollguard.cli.run`) keeps "
                "CPython's cyclic garbage collector off during start-up and skips its walk of the whole heap at "
                "exit (some 10 ms of CPU each on such a command; `-X importtime` runs go through it too)."
            )
    return [*out, ""]


def _busy(load: str, cores: str) -> bool:
    """Was the machine busy before the sandbox started? One-minute load over half the cores."""
    try:
        return float(load.split()[0]) > int(cores) / 2
    except (ValueError, IndexError):
        return True  # unknown: say so rather than claim a quiet machine


# The big-cluster section (`make bench-big`, bench/big.py) lives in the same file between these marks:
# each benchmark rewrites only its own part.
BIG_BEGIN, BIG_END = "<!-- big-cluster: written by `make bench-big` -->", "<!-- /big-cluster -->"


def big_section(doc: str) -> str:
    """The big-cluster block of a document (marks included), or ""."""
    if BIG_BEGIN not in doc or BIG_END not in doc:
        return ""
    return BIG_BEGIN + doc.split(BIG_BEGIN, 1)[1].split(BIG_END, 1)[0] + BIG_END + "\n"


def splice(doc: str, block: str) -> str:
    """``doc`` with its big-cluster block replaced by ``block`` (appended when it has none)."""
    if not block:
        return doc
    if BIG_BEGIN in doc and BIG_END in doc:
        head, rest = doc.split(BIG_BEGIN, 1)
        return head + block + rest.split(BIG_END, 1)[1].lstrip("\n")
    return doc.rstrip() + "\n\n" + block
