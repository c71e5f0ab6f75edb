"""Widgets of the repair TUI."""
