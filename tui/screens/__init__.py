"""Screens of the repair TUI: workloads, detail, confirm/progress dialog, help, pickers."""
