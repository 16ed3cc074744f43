"""The group coordinator (seeds 002 and 000), laid out as Kafka's ``group-coordinator``.

- ``_coordinator.py``: :class:`GroupCoordinator`, the shard the shell calls; it composes
- ``_membership.py`` (with ``_join.py`` and ``_rebalance.py``): join, sync, heartbeat,
  leave, static members and the member timeouts, and
- ``_offsets.py``: offset commit, fetch, expiry and deletion (of a group, or of some of
  its offsets);
- ``_results.py``: what their handlers return (replies, and records with what to do once
  they are committed) and the writes in flight; ``_timers.py``: the timers' heap;
- ``_group.py``, ``_group_state.py``: a group's metadata and its state machine's table;
- ``_group_metadata_manager.py``, ``_offsets_records.py``: the cache (the groups in
  memory, the partitions this broker serves) and its records in ``__consumer_offsets``;
  ``_snapshottable_coordinator.py``: each partition's offsets on a timeline (written,
  committed, reverted); ``_coordinator_loader.py``: a partition's replay on load;
  ``_record_helpers.py``: a group and its offsets as records and back;
  ``_offset_expiration.py``: when a classic group's offsets expire (KIP-211);
  ``_txn_offsets.py``: transactional offsets pending until their transaction's marker
  (KIP-98) and the records a load meets for them;
  ``_group_requests.py``: the requests and responses;
- ``_member_state.py``, ``_current_assignment.py``: KIP-848's consumer protocol, begun: a
  member's reconciliation states as one table and Kafka's ``CurrentAssignmentBuilder``
  and ``_target_assignment.py``, when the group epoch moves and the target it then gets
  (Kafka's ``TargetAssignmentBuilder``); ``_consumer_group.py`` and
  ``_consumer_heartbeat.py``: a consumer group and ConsumerGroupHeartbeat over them;
  ``_consumer_records.py``: its records in ``__consumer_offsets``;
- ``_shell.py``: the trio shell. Everything else here is a core (no trio, no clock).

The package's public names are re-exported by ``minikafka.coordination``.
"""
