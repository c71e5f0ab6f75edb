"""The bottom layer: pure data and rules every other layer shares (no I/O, no cluster).

`structs` (workload refs, `KIND_NAMES`, the typed states), `errors` (the error hierarchy and the exit
codes), `selectors`, `resources` (the API resources and their paths), `readiness` (predicates every kind
shares, fail-fast), `report` (the outcome as data: JSON report, Tekton results), `images`
(`short_image`), `allocator`. It imports nothing of rollguard but itself (`.importlinter`,
docs/architecture.md).
"""
