"""The planners: read the cluster in one step, then decide (pure) what a run does or why it refuses.

The `*_read` modules (`rollout_read`, `repair_read`, `migrate_read`, `checks_read`, with `gather` and
`prefetch`) do the reads; the decisions (`rollout_decide`, `repair_decide`, `migrate_decide`,
`manifest_decide`, `members`), their types (`repair_types`), the input parsers (`inputs`, `manifests`,
`schema`, `checks`), `merge`, `preview` and `tags` are pure and tested from YAML case tables. It imports
the layers below (`core`, `kinds`, `cluster`, `state`), never a run, a command or the TUI
(`.importlinter`).
"""
