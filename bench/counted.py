"""`python -m bench.counted OUT.json ARGS...`: run `rollguard ARGS...` in this process, then write the
requests its clients sent, by verb, to OUT.json.

The API server's counters cannot tell clients apart (the sandbox's controllers and kubelet react to a
rollout with many requests of their own), so rollguard's own share is counted here, on the client side,
from `rollguard.client.Client.requests`. The command runs exactly as `rollguard ARGS...` would.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any


def main(argv: list[str]) -> int:
    out, args = argv[0], argv[1:]
    from rollguard import client as transport

    clients: list[Any] = []
    original = transport.Client.__init__

    def init(self: Any, *a: Any, **kw: Any) -> None:
        original(self, *a, **kw)
        clients.append(self)

    transport.Client.__init__ = init  # type: ignore[method-assign]
    from rollguard.cli import main as cli_main

    code = 70
    try:
        code = cli_main(args)
    finally:
        total: Counter[str] = Counter()
        for c in clients:
            total.update(c.requests)
        with open(out, "w") as f:
            json.dump(dict(total), f)
        with open(out + ".rss", "w") as f:
            f.write(str(peak_rss_kib()))
    return code


def peak_rss_kib() -> int:
    """This process image's peak RSS (VmHWM): unlike ru_maxrss, not inherited from the parent at exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
