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


def badges(findings: Iterable[Finding], *, short: bool = False, room: int = 0) -> Text:
    """Badges separated by a space, worst first; ``short``: the short forms (80 columns).

    ``room`` (0: no limit): at most that many columns; the badges that do not fit are counted as `+N`,
    never cut off, so a narrow row still says how many findings it has (the reason panel lists them)."""
    ordered = sorted(findings, key=lambda f: f.rank)
    out = Text()
    for i, finding in enumerate(ordered):
        one = badge(finding.code, short=short)
        after = len(ordered) - i - 1
        need = (1 if i else 0) + one.cell_len + (len(f" +{after}") if after else 0)
        if room and out.cell_len + need > room:
            out.append(f"{' ' if i else ''}+{len(ordered) - i}", style="bold")
            break
        if i:
            out.append(" ")
        out.append_text(one)
    return out
