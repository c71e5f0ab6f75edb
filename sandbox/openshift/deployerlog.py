"""What the process in a deployer pod prints: oc's deployer (`openshift-deploy`), re-written as texts.

Mirrors openshift/oc pkg/cli/deployer/deployer.go (`--> Scaled older deployment NAME down` for each older
RC it scales to zero first, `--> Success` at the end, an error as kcmdutil.CheckErr prints it:
`error: ...`), pkg/cli/deployer/strategy/rolling/rolling.go with rolling_updater.go (the updater's lines
through `rollingUpdaterWriter`: the first prefixed `--> `, the others indented four spaces, "Continuing
update with existing controller" dropped) and pkg/cli/deployer/strategy/recreate/recreate.go (its `--> `
lines; the update acceptor of support/acceptor.go, the scale waits' `context deadline exceeded`).
The RCs' Warning events come as the strategy returns (strategy/util/events.go RecordConfigWarnings).
Lifecycle hooks (support/lifecycle.go) print their `--> pre: Running hook pod ...`, `--> pre: Success` or
`--> pre: Failed` lines (`hooks`), not the hook pod's own log. Not printed, as not emulated: `--until`.

How the emulation hands the lines to the stand-in kubelet: pod annotation `OUTPUT_ANNOTATION`, a JSON
list of `[epoch, line]` (sandbox.kubelet serves it as the container's log).
"""

from __future__ import annotations

import json

from sandbox.openshift.kube import JSON

OUTPUT_ANNOTATION = "sandbox.rollguard.io/output"
WAIT_TIMEOUT = "context deadline exceeded"  # what wait.PollUntilContextTimeout returns at its timeout
ROLLING_TIMEOUT = "timed out waiting for any update progress to be made"

Output = list[tuple[float, str]]


def decode(pod: JSON) -> Output:
    raw = (pod.get("metadata", {}).get("annotations") or {}).get(OUTPUT_ANNOTATION) or "[]"
    try:
        return [(float(t), str(text)) for t, text in json.loads(raw)]
    except (ValueError, TypeError):
        return []


def encode(output: Output) -> str:
    return json.dumps([[round(t, 3), text] for t, text in output], separators=(",", ":"))


def scaled_older_down(rc: str) -> str:
    return f"--> Scaled older deployment {rc} down"


def config_warning(reason: str, rc: str, message: str) -> str:
    return f"-->  {reason}: {rc} {message}"  # two spaces, as events.go prints it


def events_unlisted(rc: str, error: str) -> str:
    return f"--> Error listing events for replication controller {rc}: {error}"


def success() -> str:
    return "--> Success"


def error(message: str) -> str:
    return message if message.startswith("error: ") else f"error: {message}"


# -- Rolling (rolling_updater.go, through rolling.go's rollingUpdaterWriter) -------------------------------


def rolling_start(
    *, new: str, new_replicas: int, desired: int, old: str, old_replicas: int, min_available: int, surge: int
) -> str:
    return (
        f"--> Scaling up {new} from {new_replicas} to {desired}, scaling down {old} from {old_replicas} to 0 "
        f"(keep {min_available} pods available, don't exceed {desired + surge} pods)"
    )


def rolling_scale(rc: str, *, up: bool, to: int) -> str:
    return f"    Scaling {rc} {'up' if up else 'down'} to {to}"


# -- Recreate (recreate.go; also a Rolling DC's first rollout) ---------------------------------------------


def recreate_scale_down(rc: str) -> str:
    return f"--> Scaling {rc} down to zero"


def recreate_scale_to_one(rc: str) -> str:
    return f"--> Scaling {rc} to 1 before performing acceptance check"


def recreate_scale(rc: str, to: int) -> str:
    return f"--> Scaling {rc} to {to}"


def terminated_wait_failed() -> str:
    return (
        f"--> Failed to wait for old pods to be terminated: {WAIT_TIMEOUT}\n"
        "New pods may be scaled up before old pods get terminated!"
    )


def scale_failed(rc: str, to: int) -> str:
    return f"couldn't scale {rc} to {to}: {WAIT_TIMEOUT}"


def acceptor_rejected(*, namespace: str, rc: str, timeout: int) -> str:
    return (
        f"update acceptor rejected {rc}: pods for rc '{namespace}/{rc}' took longer than {timeout} seconds "
        "to become available"
    )
