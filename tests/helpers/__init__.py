"""Test equipment shared by the test modules; no test module imports another test module, and no test
package another's modules: what two packages use lives here.

- `cluster`: the live sandbox's test group (names, images, object bodies), waits on cluster state, and
  running the `rollguard` command against the sandbox.
- `scenarios`: multi-step situations built on the live sandbox (image streams and triggers, a killed run,
  a failed rollout, someone else's edit).
- `openshift_api`: the same for the emulation's own tests, on the sandbox's plain HTTP client.
- `planning`: the planners' reads built from the YAML case tables (tests/cases/planning/).
- `fakecluster`, `tui_objects`, `tui`, `snapshot`: the TUI's harness: an in-memory cluster that fits
  `rollguard.cluster.api.Api`, the objects it is filled with, the app and Pilot helpers, SVG snapshots.
- `proxy`: `FaultProxy`, a fault-injecting HTTP proxy in front of the sandbox's API server (errors,
  dropped connections, cut watches, hooks around the k-th write), for the chaos tests and any test that
  needs a request count or a fault.
- `chaos`: the chaos cases' group, scratch namespaces, lease expiry, killing a run mid-way, and the
  invariant every chaos case ends with (`assert_consistent`).

YAML case tables (data, not code) live in tests/cases/: `state` (whole namespaces as the API returns them),
`planning`, `manifests`, `pods`, `readiness`.
"""

from pathlib import Path

CASES = Path(__file__).resolve().parent.parent / "cases"
