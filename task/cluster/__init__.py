"""Talking to the API server: the `api` contract and its HTTP `client`, and what is kept in the cluster.

`api`, `client`, `transport`, `pulse` (holding through an outage), `k8s` (the official client's parts),
`kubeconfig`; the watch-fed live `cache` and `reduce` (objects cut down for read-only views); the group's
`journal` (`journal_codec`: its ConfigMap layout), `lock` (Lease and fence) and `claims`; `streams` and
`access` (permission reviews). It imports only `rollguard.core` and `rollguard.kinds`; never a planner,
a run or the TUI (`.importlinter`).
"""
