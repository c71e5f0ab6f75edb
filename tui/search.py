"""Search in a page of text as k9s and less do: `/` a pattern, Enter, then `n` the next match, `N` the one
before (issue 30 point 6). Pure: the logs and YAML pages keep their lines, ask `find` for the matches and
`Matches.step` for where to go, and highlight what `spans` gives.

The pattern is a regular expression when it is one (k9s' search is), else plain text; it is
case-insensitive unless it has an upper-case letter (less's and vim's smartcase). An empty pattern
matches nothing. Steps wrap around the page's ends, and say so, as less does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

MATCH_STYLE = "black on yellow"  # a match, as less marks it


def compile_pattern(pattern: str) -> re.Pattern[str] | None:
    """``pattern`` as a regular expression (plain text when it does not compile), None when empty."""
    if not pattern:
        return None
    flags = 0 if any(c.isupper() for c in pattern) else re.IGNORECASE
    try:
        return re.compile(pattern, flags)
    except re.error:
        return re.compile(re.escape(pattern), flags)


@dataclass(frozen=True)
class Matches:
    """The lines of a page that match a pattern, in page order."""

    pattern: str
    lines: tuple[int, ...] = ()

    def step(self, current: int | None, *, backwards: bool = False) -> tuple[int | None, bool]:
        """The match line after (or before) line ``current``, and whether that wrapped round the page.

        ``current`` None: the first match (the last one, backwards)."""
        if not self.lines:
            return None, False
        if current is None:
            return (self.lines[-1] if backwards else self.lines[0]), False
        if backwards:
            before = [n for n in self.lines if n < current]
            return (before[-1], False) if before else (self.lines[-1], True)
        after = [n for n in self.lines if n > current]
        return (after[0], False) if after else (self.lines[0], True)

    def position(self, line: int | None) -> str:
        """``3/12`` for the match on ``line`` (``0/12`` when it is on none), as a status line shows it."""
        index = self.lines.index(line) + 1 if line in self.lines else 0
        return f"{index}/{len(self.lines)}"


def find(lines: Sequence[str], pattern: str) -> Matches:
    """Every line of ``lines`` that ``pattern`` matches."""
    regex = compile_pattern(pattern)
    if regex is None:
        return Matches(pattern)
    return Matches(pattern, tuple(i for i, line in enumerate(lines) if regex.search(line)))


def spans(line: str, pattern: str) -> list[tuple[int, int]]:
    """Where ``pattern`` matches in ``line`` (start, end), for highlighting; empty matches left out."""
    regex = compile_pattern(pattern)
    if regex is None:
        return []
    return [(m.start(), m.end()) for m in regex.finditer(line) if m.end() > m.start()]


def wrapped_offset(lines: Sequence[str], index: int, width: int) -> int:
    """The screen row line ``index`` starts on when each line wraps at ``width`` columns (a page scrolls
    there to show a match)."""
    if width <= 0:
        return index
    return sum(max(1, -(-len(line) // width)) for line in lines[:index])


def marked(text: Text, pattern: str) -> Text:
    """``text`` with every match of ``pattern`` in `MATCH_STYLE` (the same Text, for chaining)."""
    regex = compile_pattern(pattern)
    if regex is not None:
        text.highlight_regex(regex, style=MATCH_STYLE)
    return text
