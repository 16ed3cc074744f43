"""Elections (KIP-595's Vote, KIP-996's pre-vote): a voter grants one vote per epoch,
to a candidate whose log is at least as complete as its own, and writes it down before
it answers; a candidate counts the answers, and a majority makes it the leader, which
appends an entry of its own epoch at once (Kafka's LeaderChange control record).

A pre-vote names the prospective's current epoch, not the next: only a Candidate enters
the next one. Any (pre-)vote request from a higher epoch moves its receiver, the leader
included, up to that epoch (Kafka's ``handleVoteRequest``), so a voter stranded above
the others by an election it lost brings them up to it and takes part again."""

from __future__ import annotations

from ._base import RaftNodeBase
from ._events import VoteAnswered
from ._leader import LeaderState
from ._log import Entry
from ._messages import Errors, VoteRequest, VoteResponse
from ._states import State


class Election(RaftNodeBase):
    """How a node asks for votes, grants them, counts them, and begins to lead."""

    def _vote_request(self, pre_vote: bool) -> VoteRequest:
        # KIP-996: a pre-vote names the node's current epoch (it enters the next one only
        # as a Candidate), so a voter behind it learns the epoch it is in.
        return VoteRequest(
            self.epoch,
            self.node_id,
            self.log.last_epoch,
            self.log.end_offset,
            pre_vote,
        )

    def _handle_vote(self, request: VoteRequest, now: float) -> VoteResponse:
        granted, reason = self._vote_decision(request, now)
        if granted and not request.pre_vote and self.state is not State.VOTED:
            self._become(
                State.VOTED, now, voted_id=request.candidate_id, why="grants a vote"
            )
        if self.tracer.enabled:
            self.tracer.emit(
                VoteAnswered(
                    self.node_id,
                    request.candidate_id,
                    request.candidate_epoch,
                    request.pre_vote,
                    granted,
                    reason,
                ),
                ts=now,
            )
        return VoteResponse(
            Errors.NONE,
            self.epoch,
            self._known_leader,
            granted,
            request.pre_vote,
            reason,
        )

    def _vote_decision(self, request: VoteRequest, now: float) -> tuple[bool, str]:
        if not self.is_voter:
            return False, "an observer does not vote"
        if request.candidate_id not in self.voters:
            return False, f"{request.candidate_id} is not a voter"
        if request.candidate_epoch < self.epoch:
            return False, f"epoch {request.candidate_epoch} is older than {self.epoch}"
        if request.candidate_epoch > self.epoch:
            # Pre-vote or vote, the sender is in that epoch: a voter behind it
            # (the leader too) moves up to it, as Kafka's handleVoteRequest does.
            self._observe_epoch(request.candidate_epoch, None, now)
        if not self._log_is_up_to_date(request):
            return False, "the candidate's log is behind this voter's"
        if request.pre_vote:
            if self.state is State.LEADER:
                return False, "this voter is the leader"
            if self._hears_from_leader(now):
                return False, f"this voter still hears from leader {self.leader_id}"
            return True, "pre-vote: log up to date and no leader heard from"
        if self.leader_id is not None:
            return False, f"epoch {self.epoch} already has leader {self.leader_id}"
        if self.voted_id is not None and self.voted_id != request.candidate_id:
            return False, f"already voted for {self.voted_id} in epoch {self.epoch}"
        return True, "log up to date, no other vote in this epoch"

    def _log_is_up_to_date(self, request: VoteRequest) -> bool:
        mine = (self.log.last_epoch, self.log.end_offset)
        return (request.last_offset_epoch, request.last_offset) >= mine

    def _handle_vote_response(
        self, source: int, response: VoteResponse, now: float
    ) -> None:
        self._observe_epoch(response.leader_epoch, response.leader_id, now)
        expected = State.PROSPECTIVE if response.pre_vote else State.CANDIDATE
        if self.state is not expected:
            return
        (self._granted if response.vote_granted else self._rejected).add(source)
        majority = len(self.voters) // 2 + 1
        if len(self._granted) >= majority:
            if expected is State.PROSPECTIVE:
                self._become(State.CANDIDATE, now, why="a majority granted pre-votes")
            else:
                self._become(State.LEADER, now, why="a majority voted for it")
        elif len(self._rejected) >= len(self.voters) - majority + 1:
            if expected is State.PROSPECTIVE and self.leader_id not in (
                None,
                self.node_id,
            ):
                # It stood because it lost touch with a leader the others still follow.
                self._become(
                    State.FOLLOWER, now, leader_id=self.leader_id, why="pre-vote lost"
                )
            elif expected is State.PROSPECTIVE:
                self._become(State.UNATTACHED, now, why="pre-vote lost")
            else:
                self._election_deadline = now + self._election_backoff()

    def _begin_leadership(self, now: float) -> None:
        start = self.log.end_offset
        self._leader = LeaderState.begin(self.node_id, self.voters, start, now)
        self._leader.announce_deadline = now + self.config.fetch_timeout / 2
        self._election_retries = 0
        # Kafka's LeaderChange control record: an entry of the new epoch to commit, which
        # commits everything before it too.
        self._append_as_leader([Entry(start, self.epoch, b"", control=True)], now)
