"""Deadlines: the heap a core answers next_deadline() from, checked against a plain dict."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from minikafka.common import CoreResult, Deadlines


def test_earliest_first_and_reschedule_replaces() -> None:
    d: Deadlines[str] = Deadlines()
    d.schedule("a", 5.0)
    d.schedule("b", 3.0)
    d.schedule("a", 1.0)  # moved earlier
    d.schedule("b", 9.0)  # moved later
    assert d.next_deadline() == 1.0
    assert d.pop_due(4.0) == ["a"]
    assert d.next_deadline() == 9.0
    assert "a" not in d
    assert "b" in d
    d.cancel("b")
    assert d.next_deadline() is None
    assert d.pop_due(100.0) == []


def test_ties_are_popped_in_scheduling_order() -> None:
    d: Deadlines[int] = Deadlines()
    for key in (3, 1, 2):
        d.schedule(key, 7.0)
    assert d.pop_due(7.0) == [3, 1, 2]


ops = st.lists(
    st.tuples(
        st.sampled_from(["schedule", "cancel", "pop"]),
        st.integers(0, 5),
        st.integers(0, 50),
    ),
    max_size=60,
)


@given(ops)
def test_matches_a_plain_dict(operations: list[tuple[str, int, int]]) -> None:
    """Whatever the order of schedules, cancels and pops, the heap agrees with a dict."""
    d: Deadlines[int] = Deadlines()
    model: dict[int, float] = {}
    for op, key, when in operations:
        if op == "schedule":
            d.schedule(key, float(when))
            model[key] = float(when)
        elif op == "cancel":
            d.cancel(key)
            model.pop(key, None)
        else:
            due = sorted(
                (k for k, t in model.items() if t <= when), key=lambda k: model[k]
            )
            assert sorted(d.pop_due(float(when))) == sorted(due)
            for k in due:
                del model[k]
        assert d.next_deadline() == (min(model.values()) if model else None)
        top = d.peek()
        assert (top[0] if top else None) == d.next_deadline()
        assert top is None or model[top[1]] == top[0]
        assert len(d) == len(model)


def test_core_result_defaults_and_sum() -> None:
    result: CoreResult[bytes, str, int] = CoreResult(replies=("ok",))
    assert not result.records
    assert result
    assert not CoreResult()
    written: CoreResult[bytes, str, int] = CoreResult((b"r",), ("ok",))
    assert written.records == (b"r",)
    sent: CoreResult[bytes, str, int] = CoreResult(messages=(1,))
    assert written + sent + written == CoreResult((b"r", b"r"), ("ok", "ok"), (1,))
