"""`python -m sandbox up|down|status [--dir DIR] [--port PORT]`: run a local sandbox cluster."""

from __future__ import annotations

import argparse
import sys
import time

from sandbox import cluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    commands = {
        "up": "start a sandbox and wait until it is ready",
        "down": "stop the processes a sandbox's `up` started",
        "status": "show whether each component is running (exit 1 if any is not)",
    }
    for name, help_ in commands.items():
        cmd = sub.add_parser(name, help=help_)
        cmd.add_argument(
            "--dir", default=cluster.DEFAULT_DIR, help=f"sandbox directory (default {cluster.DEFAULT_DIR})"
        )
        if name == "up":
            cmd.add_argument(
                "--port", type=int, default=cluster.DEFAULT_PORT, help="API server port (default 6443)"
            )
            cmd.add_argument("--no-openshift", action="store_true", help="leave the OpenShift emulation out")
    args = parser.parse_args(argv)

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if args.command == "up":
        t0 = time.monotonic()
        try:
            sb = cluster.up(args.dir, args.port, openshift=not args.no_openshift, log=say)
        except cluster.SandboxError as e:
            say(f"sandbox: {e}")
            return 1
        say(f"sandbox ready in {time.monotonic() - t0:.1f}s: {sb.server}, files in {sb.dir}")
        print(f"export KUBECONFIG={sb.kubeconfig}", flush=True)
        return 0
    if args.command == "down":
        cluster.down(args.dir, log=say)
        return 0
    rows = cluster.status(args.dir)
    for name, pid, alive in rows:
        print(f"{name:10} {'running' if alive else 'stopped'}{f' (pid {pid})' if pid else ''}")
    return 0 if rows and all(alive for _n, _p, alive in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
