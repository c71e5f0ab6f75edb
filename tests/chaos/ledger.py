"""The chaos ledger: what each chaos test tried, injected and verified, for docs/RELIABILITY.md.

Tests take the `ledger` fixture (tests/chaos/conftest.py), an `Entry`, and call `case()` once per
case; the session hook writes the entries to build/chaos/ and renders the document from them.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = ROOT / "build" / "chaos"


@dataclass
class Case:
    name: str
    passed: bool
    faults: dict[str, int]
    states: int
    detail: str = ""


@dataclass
class Entry:
    """One chaos test's figures."""

    area: str
    test: str
    marked_chaos: bool
    cases: list[Case] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""  # the test failed outside any case

    def case(
        self,
        name: str,
        *,
        passed: bool = True,
        faults: dict[str, int] | Counter[str] | None = None,
        states: int = 0,
        detail: str = "",
    ) -> Case:
        found = Case(name, passed, dict(faults or {}), states, detail[:300])
        self.cases.append(found)
        return found

    @property
    def passed(self) -> bool:
        return not self.error and all(c.passed for c in self.cases)


ENTRIES: list[Entry] = []


def save(entries: list[Entry], *, seconds: float, marker: str) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {
        "marker": marker,
        "seconds": round(seconds, 1),
        "entries": [asdict(e) for e in entries],
    }
    path = RESULTS_DIR / f"results-{marker}.json"
    path.write_text(json.dumps(data, indent=1))
    return path


def dump(entries: list[Entry], seconds: float, path: Path) -> None:
    """One xdist worker's entries, written whole (a reader never sees half a part)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"seconds": seconds, "entries": [asdict(e) for e in entries]}))
    tmp.replace(path)


def load_part(path: Path) -> tuple[list[Entry], float]:
    data = json.loads(path.read_text())
    return [_entry(raw) for raw in data["entries"]], float(data["seconds"])


def _entry(raw: dict[str, Any]) -> Entry:
    cases = [Case(**c) for c in raw.pop("cases")]
    return Entry(**raw, cases=cases)


def load(path: Path) -> tuple[list[Entry], dict[str, Any]]:
    data = json.loads(path.read_text())
    return [_entry(raw) for raw in data["entries"]], data
