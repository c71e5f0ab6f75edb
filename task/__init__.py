"""rollguard's engine and CLI: guarded group rollouts of DeploymentConfigs and Deployments.

Its sources (task/) are cut into layer folders, lowest first: `core` < `kinds` < `cluster` < `state` <
`plan` < `run` < `commands` (and `cli`); a module imports only from its own layer and the ones below
(`.importlinter`, docs/architecture.md). None of it imports Textual: the TUI (`rollguard.tui`, sources
in tui/) is built on top of `run`.
"""

__version__ = "0.1.0"
