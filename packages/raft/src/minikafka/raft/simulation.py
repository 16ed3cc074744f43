"""The simulator's public surface: whole quorums in virtual time, under faults, with
Raft's invariants checked after every step (:mod:`._simulator`, Kafka's
``RaftEventSimulationTest``).

A :class:`Scenario` is a quorum's shape and its fault schedule (:class:`Fault`:
crashes, restarts, partitions, heals), drawn at random from a seed
(:func:`random_scenario`, :func:`storm_scenario`) or written by hand; a
:class:`Simulation` runs it and returns a :class:`Result` (``ok``, or the
:class:`Violation` it found); :func:`shrink` cuts a failing schedule down to the faults
that matter; :func:`describe` and :func:`format_timeline` print a scenario and a run::

    from minikafka.raft.simulation import Simulation, random_scenario, shrink
    result = Simulation(random_scenario(seed, 3, 2), seed).run()
"""

from ._election_printout import format_timeline as format_timeline
from ._scenarios import Fault as Fault
from ._scenarios import Scenario as Scenario
from ._scenarios import describe as describe
from ._scenarios import random_scenario as random_scenario
from ._scenarios import storm_scenario as storm_scenario
from ._simulator import NodeFactory as NodeFactory
from ._simulator import Result as Result
from ._simulator import Simulation as Simulation
from ._simulator import Violation as Violation
from ._simulator import shrink as shrink

__all__ = [
    "Fault",
    "NodeFactory",
    "Result",
    "Scenario",
    "Simulation",
    "Violation",
    "describe",
    "format_timeline",
    "random_scenario",
    "shrink",
    "storm_scenario",
]
