"""The TUI tests' fixture: the demo cluster in memory (helpers in tests/helpers/tui.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.fakecluster import FakeCluster
from tests.helpers.tui_objects import demo_cluster


@pytest.fixture
def fake() -> Iterator[FakeCluster]:
    cluster = demo_cluster()
    yield cluster
    cluster.close()
