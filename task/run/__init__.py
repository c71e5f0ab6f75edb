"""A run on a group: lock, journal, guarded writes, waits, revert, checks, Events (the only layer that
writes workloads).

`group` (the skeleton every run shares) with `group_write` and `group_revert`; the runs built on it:
`rollout`, `repair`, `migrate`; `promote` (ImageStream tags), `wait` (judging many workloads on watch
events), `refusals`, `verify`, `bake` and `checks/` (the post-rollout checks), `events` (Kubernetes
Events). It imports every layer below (`core`, `kinds`, `cluster`, `state`, `plan`), never a command
or the TUI (`.importlinter`).
"""
