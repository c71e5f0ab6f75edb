"""rollguard's engine and CLI: guarded group rollouts of DeploymentConfigs and Deployments.

This package never imports Textual: the TUI (package `tui`) is built on top of it.
"""

__version__ = "0.1.0"
