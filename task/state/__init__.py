"""The state model: what is wrong with each workload, judged from the API objects (read-only).

`model` (its types), `assessment` (the findings, pure), `inventory` (reading namespaces in bounded
memory), `list_plan` (which list requests a selector needs). `status`, `drift-check`, the repair
planner and the TUI share it. It imports `rollguard.core`, `rollguard.kinds` and `rollguard.cluster`,
never a planner, a run or the TUI (`.importlinter`).
"""
