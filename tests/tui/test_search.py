"""Search in the logs and YAML pages (issue 30 point 6), the pure part (`rollguard.tui.search`): which
lines match, where `n` and `N` go (wrapping round the ends, as less does), smartcase, regular expressions
and plain text alike."""

from __future__ import annotations

from rollguard.tui.search import Matches, find, spans, wrapped_offset

LOG = [
    "INFO starting on :8080",
    "WARN slow upstream payments (3s)",
    "ERROR payment declined: card expired",
    "INFO retry",
    "error: exit code 1 [pid 7]",
]


def test_lines_that_match_smartcase() -> None:
    assert find(LOG, "error").lines == (2, 4)  # lower case: any case
    assert find(LOG, "ERROR").lines == (2,)  # an upper-case letter: this case only
    assert find(LOG, "").lines == ()


def test_regular_expressions_and_plain_text() -> None:
    assert find(LOG, r"pay\w+").lines == (1, 2)
    assert find(LOG, "[pid").lines == (4,)  # not a valid expression: the text itself
    assert find(LOG, "(3s)").lines == (1,)  # a valid expression: a group matching "3s"
    assert spans("a payment, payments", "payment") == [(2, 9), (11, 18)]
    assert spans("abc", "x*") == []  # empty matches highlight nothing


def test_n_and_N_step_and_wrap() -> None:
    found = Matches("x", (2, 5, 9))
    assert found.step(None) == (2, False)
    assert found.step(None, backwards=True) == (9, False)
    assert found.step(2) == (5, False)
    assert found.step(6) == (9, False)  # from a line between matches: the next one
    assert found.step(9) == (2, True)  # past the last: the first again, said
    assert found.step(2, backwards=True) == (9, True)
    assert found.step(5, backwards=True) == (2, False)
    assert Matches("x").step(3) == (None, False)
    assert found.position(5) == "2/3" and found.position(4) == "0/3"


def test_the_row_a_wrapped_line_starts_on() -> None:
    lines = ["a" * 25, "", "b" * 10, "c"]
    assert [wrapped_offset(lines, i, 10) for i in range(4)] == [0, 3, 4, 5]
