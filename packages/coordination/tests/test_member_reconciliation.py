"""A consumer-protocol member's reconciliation (KIP-848, Kafka's CurrentAssignmentBuilder).

One test per edge of the table, the epoch checks and the two deadlines; then a property
over random runs of target changes, heartbeats (prompt, slow to revoke, or repeating an
answer that was lost), session expiries and joins: no partition is ever owned by two
members at once, neither in the coordinator's view nor in what the clients hold, and
once the target stops moving every member reaches it. Hypothesis runs derandomized.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from minikafka.common import TopicPartition
from minikafka.coordination.group._current_assignment import (
    ConsumerGroupMember,
    Reconciliation,
    expire,
    heartbeat,
    new_member,
    partition_owners,
    reconcile,
)
from minikafka.coordination.group._member_state import (
    MEMBER_TRANSITIONS,
    EpochRule,
    IllegalMemberTransitionError,
    MemberState,
    Step,
    member_transition,
)

TP = TopicPartition
S = MemberState
SESSION_MS = 45_000


def tps(spec: str) -> frozenset[TopicPartition]:
    """``"0 2"`` -> {TP("t", 0), TP("t", 2)}."""
    return frozenset(TP("t", int(p)) for p in spec.split())


def member(
    state: S, epoch: int, assigned: str = "", revoking: str = ""
) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        "m",
        member_epoch=epoch,
        previous_member_epoch=epoch - 1,
        state=state,
        assigned=tps(assigned),
        pending_revocation=tps(revoking),
        rebalance_timeout_ms=10_000,
    )


def step(
    m: ConsumerGroupMember,
    target: str,
    owned: str | None,
    *,
    epoch: int = 5,
    others: str = "",
) -> Reconciliation:
    """Reconcile ``m`` towards ``target`` at target epoch ``epoch`` with ``others``
    owned by another member."""
    owners = dict.fromkeys(tps(others), "other") | dict.fromkeys(m.owned, "m")
    return reconcile(
        m,
        target_epoch=epoch,
        target=tps(target),
        owned=None if owned is None else tps(owned),
        owners=owners,
        now=100.0,
    )


def test_the_table_has_kafkas_states_and_fenced_is_the_end() -> None:
    assert [s.value for s in S] == [
        "stable",
        "unrevoked_partitions",
        "unreleased_partitions",
        "unknown",
        "fenced",
    ]
    assert MEMBER_TRANSITIONS[S.FENCED] == {}
    assert all(
        Step.FENCE in row for s, row in MEMBER_TRANSITIONS.items() if s is not S.FENCED
    )
    with pytest.raises(IllegalMemberTransitionError):
        member_transition(S.UNRELEASED_PARTITIONS, Step.HOLD)


def test_stable_at_the_target_epoch_holds() -> None:
    m = member(S.STABLE, 5, "0 1")
    result = step(m, "0 1", "0 1")
    assert result.step is Step.HOLD
    assert result.member == m


def test_stable_behind_a_target_that_only_adds_moves_to_it() -> None:
    result = step(member(S.STABLE, 3, "0"), "0 1", "0")
    assert result.step is Step.RECONCILED
    assert result.member.state is S.STABLE
    assert (result.member.member_epoch, result.member.previous_member_epoch) == (5, 3)
    assert result.member.assigned == tps("0 1")


def test_stable_revokes_first_and_keeps_its_epoch() -> None:
    """The target swaps 1 for 2: 1 is revoked, 2 is not given yet, the epoch stays."""
    result = step(member(S.STABLE, 3, "0 1"), "0 2", "0 1")
    assert result.step is Step.REVOKE
    m = result.member
    assert (m.state, m.member_epoch) == (S.UNREVOKED_PARTITIONS, 3)
    assert (m.assigned, m.pending_revocation) == (tps("0"), tps("1"))
    assert m.rebalance_deadline == 110.0


def test_stable_waits_for_a_partition_another_member_still_owns() -> None:
    result = step(member(S.STABLE, 3, "0"), "0 1 2", "0", others="2")
    assert result.step is Step.ASSIGN_UNRELEASED
    m = result.member
    assert (m.state, m.member_epoch, m.assigned) == (
        S.UNRELEASED_PARTITIONS,
        5,
        tps("0 1"),
    )


def test_unrevoked_holds_while_the_member_still_reports_a_revoked_partition() -> None:
    m = member(S.UNREVOKED_PARTITIONS, 3, "0", revoking="1")
    assert step(m, "0 2", "0 1").step is Step.HOLD
    assert step(m, "0 2", None).step is Step.HOLD


def test_unrevoked_acknowledged_moves_to_the_target() -> None:
    m = member(S.UNREVOKED_PARTITIONS, 3, "0", revoking="1")
    result = step(m, "0 2", "0")
    assert result.step is Step.RECONCILED
    assert (result.member.state, result.member.member_epoch) == (S.STABLE, 5)
    assert result.member.assigned == tps("0 2")
    assert result.member.pending_revocation == frozenset()
    assert result.member.rebalance_deadline is None


def test_unrevoked_acknowledged_may_take_back_what_it_just_gave_up() -> None:
    """The target moved back: the partition it revoked is its own, so it is free."""
    m = member(S.UNREVOKED_PARTITIONS, 3, "0", revoking="1")
    assert step(m, "0 1", "0").member.assigned == tps("0 1")


def test_unrevoked_acknowledged_but_revoking_again_moves_one_epoch_on() -> None:
    m = member(S.UNREVOKED_PARTITIONS, 3, "0 2", revoking="1")
    result = step(m, "2", "0 2")
    assert result.step is Step.REVOKE
    assert (
        member_transition(S.UNREVOKED_PARTITIONS, Step.REVOKE).epoch is EpochRule.NEXT
    )
    assert (result.member.member_epoch, result.member.pending_revocation) == (
        4,
        tps("0"),
    )


def test_unrevoked_acknowledged_with_some_still_elsewhere_waits_unreleased() -> None:
    m = member(S.UNREVOKED_PARTITIONS, 3, "0", revoking="1")
    result = step(m, "0 2", "0", others="2")
    assert (result.step, result.member.state) == (
        Step.ASSIGN_UNRELEASED,
        S.UNRELEASED_PARTITIONS,
    )


def test_unreleased_takes_the_partition_once_it_is_released() -> None:
    m = member(S.UNRELEASED_PARTITIONS, 5, "0")
    assert step(m, "0 2", "0", others="2").member.state is S.UNRELEASED_PARTITIONS
    released = step(m, "0 2", "0")
    assert (released.step, released.member.assigned) == (Step.RECONCILED, tps("0 2"))


def test_unreleased_revokes_when_the_target_moves_again() -> None:
    result = step(member(S.UNRELEASED_PARTITIONS, 5, "0 1"), "1", "0 1", epoch=6)
    assert (result.step, result.member.member_epoch) == (Step.REVOKE, 5)


def test_unknown_state_fences_a_member_holding_partitions_else_restarts_it() -> None:
    fenced = step(member(S.UNKNOWN, 3, "0"), "0", "0")
    assert (fenced.member.state, fenced.error) == (
        S.FENCED,
        ErrorCode.fenced_member_epoch,
    )
    assert fenced.member.owned == frozenset()
    restarted = step(member(S.UNKNOWN, 3, "0 1"), "0 2", "")
    assert (restarted.step, restarted.member.member_epoch) == (Step.REVOKE, 5)


def test_a_fenced_member_takes_no_step() -> None:
    with pytest.raises(IllegalMemberTransitionError):
        step(member(S.FENCED, 3), "0", "")


def test_heartbeat_fences_a_future_or_stale_epoch() -> None:
    m = member(S.STABLE, 5, "0 1")
    for sent in (6, 3):
        result = heartbeat(
            m,
            received_epoch=sent,
            owned=tps("0 1"),
            target_epoch=5,
            target=tps("0 1"),
            owners={},
            now=1.0,
            session_timeout_ms=SESSION_MS,
        )
        assert (result.step, result.error) == (
            Step.FENCE,
            ErrorCode.fenced_member_epoch,
        )


def test_heartbeat_accepts_the_previous_epoch_when_the_answer_was_lost() -> None:
    """Moved from 4 to 5 adding partition 1; the member never heard and sends 4 with
    partition 0 only: a subset of its assignment, so it is answered, not fenced."""
    m = member(S.STABLE, 5, "0 1")
    result = heartbeat(
        m,
        received_epoch=4,
        owned=tps("0"),
        target_epoch=5,
        target=tps("0 1"),
        owners={},
        now=1.0,
        session_timeout_ms=SESSION_MS,
    )
    assert result.step is Step.HOLD
    assert result.error is ErrorCode.none
    assert result.member.session_deadline == 46.0
    claims_more = heartbeat(
        m,
        received_epoch=4,
        owned=tps("0 7"),
        target_epoch=5,
        target=tps("0 1"),
        owners={},
        now=1.0,
        session_timeout_ms=SESSION_MS,
    )
    assert claims_more.step is Step.FENCE


def test_the_session_and_rebalance_deadlines_fence() -> None:
    joined = new_member("m", now=0.0, session_timeout_ms=SESSION_MS)
    assert expire(joined, now=44.9) is None
    expired = expire(joined, now=45.0)
    assert expired is not None
    assert expired.member.state is S.FENCED
    revoking = step(member(S.STABLE, 3, "0 1"), "0", "0 1").member
    assert expire(revoking, now=109.9) is None
    timed_out = expire(revoking, now=110.0)
    assert timed_out is not None
    assert timed_out.member.owned == frozenset()


def test_partition_owners_refuses_a_partition_with_two_owners() -> None:
    a = ConsumerGroupMember("a", assigned=tps("0"))
    b = ConsumerGroupMember("b", pending_revocation=tps("0"))
    with pytest.raises(IllegalMemberTransitionError):
        partition_owners([a, b])


PARTITIONS = [TP("t", p) for p in range(6)]


class Run:
    """A coordinator's view of one group and each client's view of itself.

    The clients are honest but may be slow: a slow client keeps consuming what it is
    asked to revoke until a later heartbeat, and a client may lose an answer and send
    its old epoch again. A fenced client learns it at once and drops everything.
    """

    def __init__(self) -> None:
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target_epoch = 0
        self.target: dict[str, frozenset[TopicPartition]] = {}
        self.client_epoch: dict[str, int] = {}
        self.holding: dict[str, frozenset[TopicPartition]] = {}
        self.now = 0.0
        self.joined = 0

    def join(self) -> None:
        member_id = f"m{self.joined}"
        self.joined += 1
        self.members[member_id] = new_member(member_id, self.now, SESSION_MS)
        self.client_epoch[member_id] = 0
        self.holding[member_id] = frozenset()

    def new_target(self, owners: list[int]) -> None:
        """A new target from the draw: partition i to live member owners[i] mod n."""
        live = sorted(self.members)
        self.target_epoch += 1
        self.target = {m: frozenset() for m in live}
        if live:
            for tp, pick in zip(PARTITIONS, owners, strict=False):
                if pick >= 0:
                    chosen = live[pick % len(live)]
                    self.target[chosen] = self.target[chosen] | {tp}

    def beat(self, pick: int, revokes: bool, answer_lost: bool) -> None:
        if not self.members:
            return
        member_id = sorted(self.members)[pick % len(self.members)]
        self.now += 1.0
        result = heartbeat(
            self.members[member_id],
            received_epoch=self.client_epoch[member_id],
            owned=self.holding[member_id],
            target_epoch=self.target_epoch,
            target=self.target.get(member_id, frozenset()),
            owners=partition_owners(self.members.values()),
            now=self.now,
            session_timeout_ms=SESSION_MS,
        )
        self.apply(member_id, result, revokes=revokes, answer_lost=answer_lost)

    def apply(
        self,
        member_id: str,
        result: Reconciliation,
        *,
        revokes: bool,
        answer_lost: bool,
    ) -> None:
        if result.member.state is S.FENCED:
            del self.members[member_id]
            self.holding[member_id] = frozenset()
            return
        self.members[member_id] = result.member
        if answer_lost:
            return
        self.client_epoch[member_id] = result.member.member_epoch
        # The answer lists what the member is assigned; revoking means dropping the rest.
        if revokes:
            self.holding[member_id] = result.member.assigned
        else:
            self.holding[member_id] = self.holding[member_id] | result.member.assigned

    def expire_one(self, pick: int) -> None:
        if not self.members:
            return
        member_id = sorted(self.members)[pick % len(self.members)]
        member = self.members[member_id]
        assert member.session_deadline is not None
        result = expire(member, member.session_deadline)
        assert result is not None
        self.apply(member_id, result, revokes=True, answer_lost=False)

    def check(self) -> None:
        """No partition has two owners, and every client holds only what the
        coordinator counts as its own."""
        partition_owners(self.members.values())
        for member_id, member in self.members.items():
            assert self.holding[member_id] <= member.owned, member_id
        for member_id in set(self.holding) - set(self.members):
            assert self.holding[member_id] == frozenset()


operations = st.one_of(
    st.tuples(st.just("join")),
    st.tuples(st.just("target"), st.lists(st.integers(-1, 5), min_size=6, max_size=6)),
    st.tuples(st.just("beat"), st.integers(0, 5), st.booleans(), st.booleans()),
    st.tuples(st.just("expire"), st.integers(0, 5)),
)


@settings(derandomize=True, max_examples=150, deadline=None)
@given(st.lists(operations, max_size=40))
def test_no_partition_is_ever_owned_by_two_members_and_every_member_settles(
    ops: list[tuple[object, ...]],
) -> None:
    run = Run()
    run.join()
    for op in ops:
        match op:
            case ("join",):
                run.join()
            case ("target", list() as owners):
                run.new_target(owners)
            case ("beat", int() as pick, bool() as revokes, bool() as lost):
                run.beat(pick, revokes, lost)
            case ("expire", int() as pick):
                run.expire_one(pick)
        run.check()
    # Once the target stops moving and every client answers promptly, each member
    # reaches its part of it within a few rounds of heartbeats.
    run.new_target(list(range(6)))
    for _ in range(4):
        for pick in range(len(run.members)):
            run.beat(pick, revokes=True, answer_lost=False)
            run.check()
    for member_id, member in run.members.items():
        assert (member.state, member.member_epoch) == (S.STABLE, run.target_epoch)
        assert member.assigned == run.target[member_id]
