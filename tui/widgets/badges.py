"""Findings as coloured badges (Rich Text), one colour per finding, worst first."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text

from rollguard.tui.views import Finding

# Colours chosen to read on dark and light themes and to stay distinct without colour (the word is shown).
STYLES = {
    "failed": "bold white on #b3261e",
    "half-rolled": "bold black on #f28c28",
    "stuck": "bold white on #8e24aa",
    "paused": "bold black on #f9d71c",
    "drifted": "bold white on #5e35b1",
    "unavailable": "bold white on #c2185b",
    "overlapping": "bold white on #00796b",
    "progressing": "bold black on #4fc3f7",
    "mutable-image": "black on #90a4ae",
    "healthy": "bold black on #43a047",
}


# Narrow terminals: a short form per finding that is never cut (the reason panel has the full word).
SHORT = {
    "failed": "fail",
    "half-rolled": "half",
    "stuck": "stuck",
    "paused": "pause",
    "drifted": "drift",
    "unavailable": "unavail",
    "progressing": "prog",
    "mutable-image": "mutable",
    "healthy": "ok",
}


def badge(code: str, *, short: bool = False) -> Text:
    word = SHORT.get(code, code) if short else code
    return Text(f" {word} ", style=STYLES.get(code, "reverse"))


def badges(findings: Iterable[Finding], *, short: bool = False) -> Text:
    """Badges separated by a space, worst first; ``short``: the short forms (80 columns)."""
    out = Text()
    for i, finding in enumerate(sorted(findings, key=lambda f: f.rank)):
        if i:
            out.append(" ")
        out.append_text(badge(finding.code, short=short))
    return out
