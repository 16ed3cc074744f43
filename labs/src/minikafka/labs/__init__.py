"""minikafka.labs: the harness of the PySpark labs (ARCHITECTURE.md, "Traces and labs").

A lab's scenario drives the real broker with tracing on; the reader's exercises turn the
traces into numbers with Spark; the lab's tests compare those numbers with what the
scenario recorded on its own side (client counts, timings, its log of what it did)::

    spark = spark_session()
    requests = read_events(spark, run_dir / "traces", RequestCompleted)
    lab = find_lab(8)
    lab.implementation().request_counts(requests).show()
"""

from ._config import Exercise as Exercise
from ._config import LabConfig as LabConfig
from ._config import LabConfigError as LabConfigError
from ._exercise import ExerciseNotDone as ExerciseNotDone
from ._lab import IMPLEMENTATION_ENV as IMPLEMENTATION_ENV
from ._lab import LABS_ROOT as LABS_ROOT
from ._lab import Lab as Lab
from ._lab import all_labs as all_labs
from ._lab import check_exercises_start_unfinished as check_exercises_start_unfinished
from ._lab import find_lab as find_lab
from ._lab import lab_of as lab_of
from ._mutants import implementations as implementations
from ._mutants import load_answers as load_answers
from ._parquet import to_parquet as to_parquet
from ._runs import REUSE_ENV as REUSE_ENV
from ._runs import RUNS_ENV as RUNS_ENV
from ._runs import scenario_run as scenario_run
from ._spark import SPARK_MASTER_ENV as SPARK_MASTER_ENV
from ._spark import read_events as read_events
from ._spark import spark_log as spark_log
from ._spark import spark_session as spark_session
from ._spark import trace_schema as trace_schema
from ._standalone import standalone_cluster as standalone_cluster

__all__ = [
    "IMPLEMENTATION_ENV",
    "LABS_ROOT",
    "REUSE_ENV",
    "RUNS_ENV",
    "SPARK_MASTER_ENV",
    "Exercise",
    "ExerciseNotDone",
    "Lab",
    "LabConfig",
    "LabConfigError",
    "all_labs",
    "check_exercises_start_unfinished",
    "find_lab",
    "implementations",
    "lab_of",
    "load_answers",
    "read_events",
    "scenario_run",
    "spark_log",
    "spark_session",
    "standalone_cluster",
    "to_parquet",
    "trace_schema",
]
