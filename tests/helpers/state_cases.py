"""The state cases (tests/cases/state/*.yaml): whole namespaces as the API lists them, loaded by kind."""

from __future__ import annotations

import datetime as dt

import yaml

from rollguard.state.inventory import LISTS
from tests.helpers import CASES

FIXTURES = CASES / "state"
AFTER_RUN = dt.datetime(2024, 5, 2, 9, 5, tzinfo=dt.UTC)  # five minutes after the cases' runs
# an object's kind -> its list's name as `assess_namespace` takes it (``dcs``, ``rcs`` ...), from inventory's table
PLURAL = {res.kind: arg for arg, (res, _, _) in LISTS.items()}


def load(name: str) -> dict[str, list[dict]]:
    lists: dict[str, list[dict]] = {p: [] for p in PLURAL.values()}
    for doc in yaml.safe_load_all((FIXTURES / name).read_text()):
        # a LIST answer carries no kind on its items: drop it, as inventory sees them
        lists[PLURAL[doc.pop("kind")]].append(doc)
    return lists
