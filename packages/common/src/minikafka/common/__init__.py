"""minikafka.common: what every layer shares, at the bottom of the layers.

- The core/shell contract's two types, so that every core (the controller, the group
  coordinator, replication, the Raft quorum) speaks the same way: :class:`CoreResult` is
  what a core asks its shell to do, :class:`Deadlines` is how it knows its next timer.
- The vocabulary every layer uses: :class:`TopicPartition`, :class:`Acks` (produce's
  ``acks``), :class:`FileRegion` (bytes of a file the log hands the network layer to send
  with ``sendfile``).
- Errors: :class:`ConfigError` (a bad configuration value, naming the key) and
  :class:`ApiError`, the base of every error that carries Kafka's :class:`ErrorCode`;
  :class:`FailureLog`, how a step that runs again and again logs a failure once.
- :class:`ConfigDef`: how every package declares its configuration keys (Kafka's
  ``ConfigDef``), from which the broker assembles ``KafkaConfig``.
- :func:`run_app`: how every ``python -m minikafka.<package>`` runs its typer app, and
  :func:`usage_error`, how its commands refuse a command line.

Importing it first thing in a program leaves out hypothesis, which kio would otherwise
load (``_program.py`` says why): this package is imported before kio by every package
that can run as a program.
"""

from . import _program as _program  # first, before kio: it runs leave_out_hypothesis()
from ._acks import Acks as Acks
from ._cli import run_app as run_app
from ._cli import usage_error as usage_error
from ._config_def import ConfigDef as ConfigDef
from ._config_def import ConfigKey as ConfigKey
from ._config_def import ConfigType as ConfigType
from ._config_def import Parser as Parser
from ._config_def import Synonym as Synonym
from ._config_def import Validator as Validator
from ._config_def import at_least as at_least
from ._config_def import between as between
from ._config_def import matches as matches
from ._config_def import one_of as one_of
from ._deadlines import Deadlines as Deadlines
from ._errors import ApiError as ApiError
from ._errors import ConfigError as ConfigError
from ._errors import ErrorCode as ErrorCode
from ._failure_log import FailureLog as FailureLog
from ._faults import FatalFaultError as FatalFaultError
from ._file_region import FileRegion as FileRegion
from ._file_region import PinnableFile as PinnableFile
from ._result import CoreResult as CoreResult
from ._topic_partition import TopicPartition as TopicPartition

__all__ = [
    "Acks",
    "ApiError",
    "ConfigDef",
    "ConfigError",
    "ConfigKey",
    "ConfigType",
    "CoreResult",
    "Deadlines",
    "ErrorCode",
    "FailureLog",
    "FatalFaultError",
    "FileRegion",
    "Parser",
    "PinnableFile",
    "Synonym",
    "TopicPartition",
    "Validator",
    "at_least",
    "between",
    "matches",
    "one_of",
    "run_app",
    "usage_error",
]
