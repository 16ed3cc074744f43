"""The purgatory: watch keys, completion by a check or by expiry, exactly once."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    rule,
)

from minikafka.replication import DelayedOperation, DelayedOperationPurgatory


@attrs.define(eq=False)
class Gate(DelayedOperation):
    """Completes once ``open`` is set; records how each completion came about."""

    name: str = ""
    open: bool = False
    tries: int = 0
    events: list[str] = attrs.field(factory=list)
    on_done: list[str] | None = None  # a shared log of completions, in order

    def try_complete(self) -> bool:
        self.tries += 1
        return self.open and self.force_complete()

    def on_expiration(self) -> None:
        self.events.append("expired")

    def on_complete(self) -> None:
        self.events.append("completed")
        if self.on_done is not None:
            self.on_done.append(self.name)


def test_an_operation_whose_condition_holds_completes_at_once_and_is_not_parked() -> (
    None
):
    purgatory: DelayedOperationPurgatory[Gate] = DelayedOperationPurgatory("test")
    gate = Gate(deadline=5.0, open=True)
    assert purgatory.try_complete_else_watch(gate, ["a"])
    assert gate.events == ["completed"]
    assert (purgatory.delayed, purgatory.watched("a"), purgatory.next_deadline()) == (
        0,
        0,
        None,
    )


def test_a_check_of_its_key_completes_it_once_the_condition_holds() -> None:
    purgatory: DelayedOperationPurgatory[Gate] = DelayedOperationPurgatory("test")
    gate = Gate(deadline=5.0)
    assert not purgatory.try_complete_else_watch(gate, ["a"])
    assert (purgatory.delayed, purgatory.watched("a")) == (1, 1)
    assert len(purgatory.check_and_complete("a")) == 0  # checked, condition still false
    assert gate.tries == 2
    assert not gate.completed
    gate.open = True
    assert len(purgatory.check_and_complete("b")) == 0  # another key: not even asked
    assert gate.tries == 2
    assert len(purgatory.check_and_complete("a")) == 1
    assert gate.events == ["completed"]
    assert (purgatory.delayed, purgatory.watched("a"), purgatory.next_deadline()) == (
        0,
        0,
        None,
    )
    assert len(purgatory.check_and_complete("a")) == 0  # nothing left to complete
    assert len(purgatory.expire(100.0)) == 0  # nor to expire
    assert gate.events == ["completed"]


def test_expiry_completes_at_the_deadline_exactly_once() -> None:
    purgatory: DelayedOperationPurgatory[Gate] = DelayedOperationPurgatory("test")
    gate = Gate(deadline=5.0)
    purgatory.try_complete_else_watch(gate, ["a", "b"])
    assert purgatory.next_deadline() == 5.0
    assert len(purgatory.expire(4.999)) == 0
    assert not gate.completed
    assert len(purgatory.expire(5.0)) == 1  # the deadline itself is due
    assert gate.events == ["expired", "completed"]
    assert len(purgatory.expire(10.0)) == 0
    gate.open = True
    assert (
        len(purgatory.check_and_complete("a")) + len(purgatory.check_and_complete("b"))
        == 0
    )
    assert gate.events == ["expired", "completed"]
    assert gate.tries == 1  # a completed operation is never asked again


def test_completion_through_one_key_removes_it_from_the_others() -> None:
    purgatory: DelayedOperationPurgatory[Gate] = DelayedOperationPurgatory("test")
    gate = Gate(deadline=5.0)
    other = Gate(deadline=6.0)
    purgatory.try_complete_else_watch(gate, ["a", "b", "c"])
    purgatory.try_complete_else_watch(other, ["b"])
    assert [purgatory.watched(k) for k in "abc"] == [1, 2, 1]
    gate.open = True
    assert len(purgatory.check_and_complete("a")) == 1
    assert [purgatory.watched(k) for k in "abc"] == [0, 1, 0]
    tries = gate.tries
    assert len(purgatory.check_and_complete("b")) == 0  # ``other`` is still closed
    assert len(purgatory.check_and_complete("c")) == 0
    assert gate.tries == tries  # dropped from b and c without being asked again
    assert gate.events == ["completed"]
    assert purgatory.delayed == 1


def test_one_check_completes_every_ready_operation_on_the_key() -> None:
    purgatory: DelayedOperationPurgatory[Gate] = DelayedOperationPurgatory("test")
    gates = [Gate(deadline=5.0 + i, name=str(i)) for i in range(4)]
    for gate in gates:
        purgatory.try_complete_else_watch(gate, ["k"])
    gates[1].open = gates[3].open = True
    assert len(purgatory.check_and_complete("k")) == 2
    assert [g.completed for g in gates] == [False, True, False, True]
    assert purgatory.watched("k") == 2


def test_next_deadline_is_the_earliest_still_waiting() -> None:
    purgatory: DelayedOperationPurgatory[Gate] = DelayedOperationPurgatory("test")
    assert purgatory.next_deadline() is None
    late, early, middle = Gate(deadline=9.0), Gate(deadline=3.0), Gate(deadline=6.0)
    purgatory.try_complete_else_watch(late, ["a"])
    purgatory.try_complete_else_watch(early, ["b"])
    purgatory.try_complete_else_watch(middle, ["c"])
    assert purgatory.next_deadline() == 3.0
    early.open = True
    # completed by its key: its deadline no longer counts
    purgatory.check_and_complete("b")
    assert purgatory.next_deadline() == 6.0
    assert len(purgatory.expire(6.0)) == 1
    assert middle.events == ["expired", "completed"]
    assert purgatory.next_deadline() == 9.0
    assert len(purgatory.expire(9.0)) == 1
    assert purgatory.next_deadline() is None


def test_an_operation_without_keys_waits_only_for_its_deadline() -> None:
    purgatory: DelayedOperationPurgatory[Gate] = DelayedOperationPurgatory("test")
    gate = Gate(deadline=1.0)
    assert not purgatory.try_complete_else_watch(gate, [])
    assert purgatory.delayed == 1
    assert len(purgatory.expire(1.0)) == 1
    assert gate.events == ["expired", "completed"]


def test_operations_parked_while_a_check_completes_others_stay_watched() -> None:
    """An answer may cause the next request at once (a consumer fetching again, a
    producer sending its next batch): operations parked, and checks run, from inside a
    completion must leave every waiting operation watched."""
    purgatory: DelayedOperationPurgatory[Gate] = DelayedOperationPurgatory("test")
    done: list[str] = []
    waiting = Gate(deadline=50.0, name="waiting", on_done=done)
    follow_up = Gate(deadline=50.0, name="follow-up", on_done=done)

    @attrs.define(eq=False)
    class Chained(Gate):
        def on_complete(self) -> None:
            super().on_complete()
            purgatory.check_and_complete("k")  # the answer touched the same key ...
            # ... and parked the next
            purgatory.try_complete_else_watch(follow_up, ["k"])

    first = Chained(deadline=50.0, name="first", on_done=done)
    purgatory.try_complete_else_watch(first, ["k"])
    purgatory.try_complete_else_watch(waiting, ["k"])
    first.open = True
    assert len(purgatory.check_and_complete("k")) == 1
    assert done == ["first"]
    assert purgatory.watched("k") == 2
    follow_up.open = waiting.open = True
    assert len(purgatory.check_and_complete("k")) == 2
    assert sorted(done) == ["first", "follow-up", "waiting"]


def test_a_change_made_inside_a_completion_is_seen_by_operations_checked_before_it() -> (
    None
):
    purgatory: DelayedOperationPurgatory[Gate] = DelayedOperationPurgatory("test")
    earlier = Gate(deadline=50.0, name="earlier")

    @attrs.define(eq=False)
    class Opener(Gate):
        def on_complete(self) -> None:
            super().on_complete()
            earlier.open = True  # the answer changed what ``earlier`` waits for ...
            # ... the running check goes again
            assert len(purgatory.check_and_complete("k")) == 0

    purgatory.try_complete_else_watch(earlier, ["k"])  # checked first, still closed
    opener = Opener(deadline=50.0, open=False)
    purgatory.try_complete_else_watch(opener, ["k"])
    opener.open = True
    assert len(purgatory.check_and_complete("k")) == 2
    assert earlier.events == ["completed"]
    assert opener.events == ["completed"]
    assert purgatory.watched("k") == 0


def test_an_answer_that_raises_leaves_the_other_operations_watched() -> None:
    purgatory: DelayedOperationPurgatory[Gate] = DelayedOperationPurgatory("test")

    @attrs.define(eq=False)
    class Failing(Gate):
        def on_complete(self) -> None:
            raise RuntimeError("the connection is gone")

    failing = Failing(deadline=50.0)
    after = Gate(deadline=50.0)
    purgatory.try_complete_else_watch(failing, ["k"])
    purgatory.try_complete_else_watch(after, ["k"])
    failing.open = after.open = True
    with pytest.raises(RuntimeError):
        purgatory.check_and_complete("k")
    # ``after`` was not reached, and is still watched
    assert purgatory.watched("k") == 1
    assert len(purgatory.check_and_complete("k")) == 1
    assert after.events == ["completed"]


def test_completed_operations_are_swept_from_watch_lists_they_were_not_checked_on() -> (
    None
):
    purgatory: DelayedOperationPurgatory[Gate] = DelayedOperationPurgatory("test")
    for i in range(200):
        gate = Gate(deadline=100.0 + i, open=False)
        purgatory.try_complete_else_watch(gate, [("own", i), "shared"])
        gate.open = True
        purgatory.check_and_complete(("own", i))
    assert purgatory.delayed == 0
    assert purgatory.watched("shared") == 0
    purgatory.expire(0.0)  # the reaper's pass also sweeps the lists
    assert len(purgatory.check_and_complete("shared")) == 0
    assert purgatory.next_deadline() is None


KEYS = ("a", "b", "c")


class PurgatoryModel(RuleBasedStateMachine):
    """Random parks, condition changes, checks and expiries against a simple model.

    Every operation completes exactly once; never before its condition holds or its
    deadline passes; and always by the time a check of one of its keys sees its
    condition, or an expiry reaches its deadline.
    """

    operations = Bundle("operations")

    def __init__(self) -> None:
        super().__init__()
        self.purgatory: DelayedOperationPurgatory[Gate] = DelayedOperationPurgatory(
            "model"
        )
        self.now = 0.0
        self.all: list[tuple[Gate, frozenset[str]]] = []
        self.completed_at: dict[int, tuple[float, bool]] = {}

    def _record(self, gate: Gate) -> None:
        assert id(gate) not in self.completed_at, "completed twice"
        # Not before its condition or its deadline:
        assert gate.open or self.now >= gate.deadline, "completed too early"
        self.completed_at[id(gate)] = (self.now, gate.open)

    @rule(
        target=operations,
        keys=st.frozensets(st.sampled_from(KEYS), max_size=3),
        wait=st.integers(0, 20),
        open_now=st.booleans(),
    )
    def park(self, keys: frozenset[str], wait: int, open_now: bool) -> Gate:
        model = self

        @attrs.define(eq=False)
        class Recorded(Gate):
            def on_complete(self) -> None:
                super().on_complete()
                model._record(self)

        gate = Recorded(deadline=self.now + wait, open=open_now)
        completed = self.purgatory.try_complete_else_watch(gate, sorted(keys))
        assert completed == open_now
        self.all.append((gate, keys))
        return gate

    @rule(gate=operations)
    def open_quietly(self, gate: Gate) -> None:
        gate.open = True  # nobody checks yet: it waits for a check or its deadline

    @rule(gate=consumes(operations), data=st.data())
    def open_and_check(self, gate: Gate, data: st.DataObject) -> None:
        gate.open = True
        keys = next(k for g, k in self.all if g is gate)
        if keys:
            key = data.draw(st.sampled_from(sorted(keys)))
            self.purgatory.check_and_complete(key)
            assert gate.completed

    @rule(key=st.sampled_from(KEYS))
    def check(self, key: str) -> None:
        self.purgatory.check_and_complete(key)
        for gate, keys in self.all:
            if key in keys and gate.open:
                assert gate.completed

    @rule(step=st.integers(0, 8))
    def advance_and_expire(self, step: int) -> None:
        self.now += step
        self.purgatory.expire(self.now)
        for gate, _ in self.all:
            if gate.deadline <= self.now:
                assert gate.completed

    @invariant()
    def counts_match_the_model(self) -> None:
        waiting = [(g, k) for g, k in self.all if not g.completed]
        assert self.purgatory.delayed == len(waiting)
        for key in KEYS:
            assert self.purgatory.watched(key) == sum(key in k for _, k in waiting)
        expected = min((g.deadline for g, _ in waiting), default=None)
        assert self.purgatory.next_deadline() == expected
        for gate, _ in self.all:
            assert gate.events.count("completed") == (1 if gate.completed else 0)
            assert gate.completed == (id(gate) in self.completed_at)


PurgatoryModel.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None, derandomize=True
)
test_purgatory_against_a_model = PurgatoryModel.TestCase
