"""The files are Kafka's files: minikafka's partitions read by Kafka's own kafka-dump-log,
Kafka's read by ``minikafka dump-log``, and the same batches stored byte for byte alike.

One minikafka broker process and the session's real Kafka node (``kafka_reference``)
each get two topics of one partition and ``segment.bytes`` 1 MiB, so both roll several
segments:

- ``files-raw``: the same record batches (every codec, records from empty to ~1 MiB,
  keys and headers or none), sent unchanged in Produce requests to both brokers. Both
  assign the same offsets and leader epoch, so their segments and indexes can be
  compared byte for byte;
- ``files-client``: a real client's batches (confluent-kafka, one producer per codec,
  the zstd one idempotent: its batches carry a producer id and sequences). On
  minikafka the broker is then restarted, which moves the partition's leader epoch on,
  and more is produced: its segments hold two epochs, and its leader-epoch-checkpoint
  two entries.

Then Kafka's tool reads every minikafka segment, offset index and time index
(``--deep-iteration --print-data-log``), and minikafka's tool reads Kafka's. The
differences that remain on purpose (files minikafka does not write, the metadata log's
records) are the ones COMPAT.md's "The files on disk" lists; the last tests pin them.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import attrs
import pytest
from typer.testing import CliRunner

from minikafka.broker._cli import app
from minikafka.broker.testing import BrokerProcess
from minikafka.common import TopicPartition
from minikafka.controller._records import RECORD_TYPES, decode_record
from minikafka.log import (
    EpochEntry,
    LeaderEpochCheckpointFile,
    Log,
    LogConfig,
    OffsetCheckpointFile,
    decode_batch,
    iter_batches,
)
from minikafka.log.testing import read_all_records
from reference.kafka import KafkaNode, run_tool
from tests.reference._files import (
    DEADLINE,
    DumpedFile,
    DumpedRecord,
    Expected,
    client_records,
    create_topic,
    parse_dump,
    produce,
    raw_batches,
    send_batches,
    shown,
)

pytestmark = pytest.mark.external

RAW, CLIENT = "files-raw", "files-client"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
SEED = 39
# What kafka-dump-log prints (on stderr) when a file is not as Kafka writes it.
PROBLEMS = (
    "Mismatches in",
    "timestamp mismatch",
    "out of order timestamp",
    "not found in the log",
    "Non-consecutive offsets",
    "invalid bytes",
    "Exception",
    "Error",
)


@attrs.frozen
class Written:
    """Both brokers' files once everything was written, and what was sent."""

    kafka: Path  # copies of Kafka's two partition directories, taken while it runs
    mini_raw_live: Path  # minikafka's files-raw-0 copied at the same moment
    mini: Path  # minikafka's log.dirs, after its restart, more records and a stop
    raw: list[Expected]
    client: list[Expected]  # in offset order: before the restart, then after it


@pytest.fixture(scope="module")
def written(
    kafka_reference: KafkaNode, tmp_path_factory: pytest.TempPathFactory
) -> Written:
    root = tmp_path_factory.mktemp("files")
    batches, raw = raw_batches(SEED)
    before = {codec: client_records(SEED, codec, 25) for codec in CODECS}
    after = {codec: client_records(SEED + 1, codec, 5) for codec in CODECS}
    broker = BrokerProcess(root / "mini")
    broker.start()
    try:
        for bootstrap in (kafka_reference.bootstrap, broker.bootstrap):
            create_topic(bootstrap, RAW)
            create_topic(bootstrap, CLIENT)
            send_batches(bootstrap, RAW, batches)
            for codec, records in before.items():
                produce(bootstrap, CLIENT, codec, records, idempotent=codec == "zstd")
        for topic in (RAW, CLIENT):
            shutil.copytree(
                kafka_reference.log_dir / f"{topic}-0", root / "kafka" / f"{topic}-0"
            )
        shutil.copytree(root / "mini" / f"{RAW}-0", root / "mini-raw-live")
        broker.restart()  # the partitions' leader epoch moves on
        for codec, records in after.items():
            produce(
                broker.bootstrap, CLIENT, codec, records, idempotent=codec == "zstd"
            )
    finally:
        broker.stop()
    client = [r for records in (*before.values(), *after.values()) for r in records]
    return Written(root / "kafka", root / "mini-raw-live", root / "mini", raw, client)


# --- byte for byte ---------------------------------------------------------------------


def test_the_same_batches_make_the_same_segment_and_index_files(
    written: Written,
) -> None:
    # Guarantee: given the same batches at the same offsets in the same leader epoch,
    # minikafka's .log, .index and .timeindex files are Kafka's, byte for byte: same
    # segment boundaries, same sparse index entries (a batch's last offset and its
    # position, every index.interval.bytes), same time index entries. Kafka's active
    # segment's indexes are preallocated (segment.index.bytes of zeros) until it rolls
    # or stops; minikafka's hold only the entries, which are the same bytes.
    kafka, mini = written.kafka / f"{RAW}-0", written.mini_raw_live
    segments = sorted(p.name for p in kafka.glob("*.log"))
    assert segments == sorted(p.name for p in mini.glob("*.log"))
    assert len(segments) >= 3, "the partition should have rolled segments"
    for name in segments:
        assert (mini / name).read_bytes() == (kafka / name).read_bytes(), name
        for suffix in (".index", ".timeindex"):
            index = name.replace(".log", suffix)
            ours, theirs = (mini / index).read_bytes(), (kafka / index).read_bytes()
            if name == segments[-1]:  # the active segment
                assert theirs[: len(ours)] == ours, index
                assert not theirs[len(ours) :].strip(b"\0"), index
            else:
                assert ours == theirs, index
                assert ours, f"{index} should have entries"
    assert (mini / "leader-epoch-checkpoint").read_bytes() == (
        kafka / "leader-epoch-checkpoint"
    ).read_bytes()


# --- Kafka's tool reads minikafka's files ------------------------------------------------


def _dump_files(paths: list[Path], *flags: str) -> tuple[dict[Path, DumpedFile], str]:
    """kafka-dump-log on ``paths`` (one JVM for all); the parsed dump and its stderr."""
    run = run_tool(
        "kafka-dump-log",
        "--files",
        ",".join(str(p) for p in paths),
        *flags,
        timeout=DEADLINE,
        heap="512m",
    ).check()
    return parse_dump(run.stdout), run.stderr


def _segment_files(partition: Path) -> list[Path]:
    return [
        p.with_suffix(suffix)
        for p in sorted(partition.glob("*.log"))
        for suffix in (".log", ".index", ".timeindex")
    ]


@pytest.fixture(scope="module")
def kafka_reads_minikafka(written: Written) -> tuple[dict[Path, DumpedFile], str]:
    """kafka-dump-log --deep-iteration --print-data-log over every file of minikafka's
    two partitions (the metadata log's binary records are read by the decoder below)."""
    paths = [
        path
        for partition in (f"{RAW}-0", f"{CLIENT}-0")
        for path in _segment_files(written.mini / partition)
    ]
    return _dump_files(paths, "--deep-iteration", "--print-data-log")


def test_kafka_dump_log_finds_nothing_wrong_in_minikafkas_files(
    written: Written, kafka_reads_minikafka: tuple[dict[Path, DumpedFile], str]
) -> None:
    # Guarantee: Kafka's DumpLogSegments reads every minikafka segment and index to the
    # end and reports nothing: no invalid CRC, no bytes after the last batch, no offset
    # gap, no index entry that points at the wrong batch or timestamp.
    dumped, stderr = kafka_reads_minikafka
    for partition in (f"{RAW}-0", f"{CLIENT}-0"):
        _check_files(written.mini / partition, dumped, stderr)


def _check_files(partition: Path, dumped: dict[Path, DumpedFile], stderr: str) -> None:
    """Nothing reported, every file dumped, each batch and index read to its end."""
    for problem in PROBLEMS:
        assert problem not in stderr, stderr
    for path in _segment_files(partition):
        assert path in dumped, f"kafka-dump-log did not dump {path}"
        if path.suffix == ".log":
            _check_batches(path, dumped[path])
        else:
            # Every entry was read (none dropped as a preallocated zero entry).
            size = 8 if path.suffix == ".index" else 12
            assert len(dumped[path].entries) == path.stat().st_size // size


def _check_batches(path: Path, dumped: DumpedFile) -> None:
    """Each batch as Kafka printed it against the batch headers read from the file."""
    data = path.read_bytes()
    headers = list(iter_batches(data))
    assert [b.fields["isvalid"] for b in dumped.batches] == ["true"] * len(headers)
    assert not [n for n in dumped.notes if "invalid" in n]
    for (position, header), batch in zip(headers, dumped.batches, strict=True):
        expected = {
            "baseOffset": str(header.base_offset),
            "lastOffset": str(header.last_offset),
            "count": str(header.record_count),
            "position": str(position),
            "size": str(header.size),
            "crc": str(header.crc),
            "partitionLeaderEpoch": str(header.partition_leader_epoch),
            "producerId": str(header.producer_id),
            "baseSequence": str(header.base_sequence),
            "compresscodec": header.compression.name.lower(),
        }
        shown_fields = {name: batch.fields.get(name) for name in expected}
        assert shown_fields == expected, f"{path} position {position}"
        records = decode_batch(data[position : position + header.size])[1]
        assert [int(r.fields["offset"]) for r in batch.records] == [
            r.offset for r in records
        ]


def _records(dumped: dict[Path, DumpedFile], partition: Path) -> list[DumpedRecord]:
    return [
        record
        for path in sorted(partition.glob("*.log"))
        for batch in dumped[path].batches
        for record in batch.records
    ]


@pytest.mark.parametrize("topic", [RAW, CLIENT])
def test_kafka_dump_log_prints_every_record_minikafka_stored(
    written: Written,
    kafka_reads_minikafka: tuple[dict[Path, DumpedFile], str],
    topic: str,
) -> None:
    # Guarantee: decoding minikafka's batches with Kafka's code (every codec, records up
    # to ~1 MiB) gives back each record that was produced, at consecutive offsets from
    # 0, with its key, value and header keys.
    expected = written.raw if topic == RAW else written.client
    records = _records(kafka_reads_minikafka[0], written.mini / f"{topic}-0")
    assert [int(r.fields["offset"]) for r in records] == list(range(len(expected)))
    for record, sent in zip(records, expected, strict=True):
        assert (record.key, record.payload, record.header_keys) == (
            shown(sent.key),
            shown(sent.value),
            sent.header_keys,
        ), record.fields["offset"]
    sizes = {int(r.fields["valueSize"]) for r in records}
    assert {-1, 0, 1_000_000} <= sizes  # null, empty and ~1 MiB values


def test_the_leader_epochs_kafka_reads_are_minikafkas_checkpoint(
    written: Written, kafka_reads_minikafka: tuple[dict[Path, DumpedFile], str]
) -> None:
    # Guarantee: after a restart moved the leader epoch on, the partitionLeaderEpoch
    # Kafka reads in each batch and minikafka's leader-epoch-checkpoint (Kafka's format:
    # version 0, a count, then "epoch startOffset" lines) tell the same story: each
    # epoch starts at the first batch stamped with it.
    partition = written.mini / f"{CLIENT}-0"
    starts: dict[int, int] = {}
    for path in sorted(partition.glob("*.log")):
        for batch in kafka_reads_minikafka[0][path].batches:
            epoch = int(batch.fields["partitionLeaderEpoch"])
            starts.setdefault(epoch, int(batch.fields["baseOffset"]))
    assert len(starts) == 2, starts
    checkpoint = partition / "leader-epoch-checkpoint"
    lines = [f"{epoch} {offset}" for epoch, offset in sorted(starts.items())]
    assert checkpoint.read_text() == "\n".join(["0", "2", *lines]) + "\n"


def test_kafka_finds_minikafkas_indexes_sane(written: Written) -> None:
    # Guarantee: each index passes the check Kafka runs at start-up to decide whether to
    # rebuild it (--index-sanity-check): Kafka would load minikafka's indexes as they
    # are.
    indexes = [
        p
        for partition in (f"{RAW}-0", f"{CLIENT}-0")
        for p in _segment_files(written.mini / partition)
        if p.suffix != ".log"
    ]
    run = run_tool(
        "kafka-dump-log",
        "--files",
        ",".join(map(str, indexes)),
        "--index-sanity-check",
        timeout=DEADLINE,
    ).check()
    for index in indexes:
        # Kafka checks an index with entries; an empty one (a segment of one batch) it
        # calls empty, and so it must be.
        verdict = "is empty" if index.stat().st_size == 0 else "passed sanity check"
        assert f"{index} {verdict}." in run.stdout, run.stdout + run.stderr


# --- minikafka's tool reads Kafka's files ------------------------------------------------


def _cut(text: str | None) -> str | None:
    """What minikafka's dump shows of a printable key or value: 64 characters at most."""
    return text if text is None or len(text) <= 64 else text[:64] + "..."


@pytest.mark.parametrize("topic", [RAW, CLIENT])
def test_minikafka_dump_log_prints_what_kafka_dump_log_prints(
    written: Written, topic: str
) -> None:
    # Guarantee: on segments and indexes the real broker wrote (and is still writing:
    # its active segment's indexes are preallocated), `minikafka dump-log --deep
    # --index` prints Kafka's lines: every batch line equal, field for field; every
    # record equal but for values cut at 64 characters; every index entry equal.
    partition = written.kafka / f"{topic}-0"
    theirs, _ = _dump_files(
        _segment_files(partition), "--deep-iteration", "--print-data-log"
    )
    result = CliRunner().invoke(app, ["dump-log", "--deep", "--index", str(partition)])
    assert result.exit_code == 0, result.output
    ours = parse_dump(result.output)
    assert set(ours) == set(theirs)
    for path, dumped in theirs.items():
        assert ours[path].entries == dumped.entries, path
        assert [b.fields for b in ours[path].batches] == [
            b.fields for b in dumped.batches
        ], path
        for mine, kafkas in zip(_flat(ours[path]), _flat(dumped), strict=True):
            assert mine == attrs.evolve(
                kafkas, key=_cut(kafkas.key), payload=_cut(kafkas.payload)
            )
    assert sum(len(_flat(d)) for d in theirs.values()) == len(
        written.raw if topic == RAW else written.client[: 25 * len(CODECS)]
    )


def _flat(dumped: DumpedFile) -> list[DumpedRecord]:
    return [r for b in dumped.batches for r in b.records]


@pytest.mark.parametrize("topic", [RAW, CLIENT])
def test_minikafkas_log_opens_a_partition_the_real_broker_wrote(
    written: Written, tmp_path: Path, topic: str
) -> None:
    # Guarantee: minikafka's Log opens a partition directory Kafka wrote, as it would
    # after a crash (a running broker's files: the active segment's indexes still
    # preallocated), recovers it, and reads back every record that was produced; the
    # indexes it rebuilds from Kafka's segments are Kafka's own.
    kafka = written.kafka / f"{topic}-0"
    copy = tmp_path / kafka.name
    shutil.copytree(kafka, copy)
    log = Log.open(copy, LogConfig(segment_bytes=1024 * 1024), had_clean_shutdown=False)
    try:
        records = read_all_records(log)
        epochs = log.leader_epoch_cache.entries
    finally:
        log.close()
    sent = written.raw if topic == RAW else written.client[: 25 * len(CODECS)]
    assert [r.offset for r in records] == list(range(len(sent)))
    assert [
        Expected(r.key, r.value, tuple(h.key for h in r.headers)) for r in records
    ] == sent
    assert epochs == (EpochEntry(0, 0),)
    segments = sorted(kafka.glob("*.log"))
    for segment in segments:
        for suffix in (".index", ".timeindex"):
            ours = (copy / segment.name).with_suffix(suffix).read_bytes()
            theirs = segment.with_suffix(suffix).read_bytes()
            if segment == segments[-1]:
                # Kafka adds the active segment's last time-index entry when it stops;
                # minikafka's recovery has added it already.
                entries = theirs.rstrip(b"\0")
                entries += bytes(-len(entries) % (8 if suffix == ".index" else 12))
                assert ours.startswith(entries), segment.with_suffix(suffix).name
            else:
                assert ours == theirs, segment.with_suffix(suffix).name


# --- the other files, and what differs on purpose -----------------------------------------


def _checkpoint_lines(path: Path, entry: str) -> list[str]:
    """The lines of a checkpoint file in Kafka's grammar: version 0, a count, entries."""
    text = path.read_text()
    if not text:  # Kafka's cleaner-offset-checkpoint until something is cleaned
        return []
    assert text.endswith("\n"), path
    lines = text.removesuffix("\n").split("\n")
    assert lines[0] == "0", path
    assert int(lines[1]) == len(lines) - 2, path
    for line in lines[2:]:
        if entry == "offset":
            topic, partition, offset = line.split(" ")
            assert topic, line
            assert int(partition) >= 0, line
            assert int(offset) >= 0, line
        else:
            epoch, offset = line.split(" ")
            assert int(epoch) >= 0, line
            assert int(offset) >= 0, line
    return lines[2:]


OFFSET_CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)


def test_checkpoint_files_have_kafkas_format_both_ways(
    written: Written, kafka_reference: KafkaNode
) -> None:
    # Guarantee: the offset checkpoints and leader-epoch checkpoints each broker writes
    # follow the same grammar, and minikafka's readers read the real node's files. With
    # the same records, both brokers' high watermark line for files-raw is the same.
    for name in OFFSET_CHECKPOINTS:
        for directory in (kafka_reference.log_dir, written.mini):
            _checkpoint_lines(directory / name, "offset")
        OffsetCheckpointFile(kafka_reference.log_dir / name).read()
    for directory in (kafka_reference.log_dir, written.mini):
        for file in directory.glob("*/leader-epoch-checkpoint"):
            _checkpoint_lines(file, "epoch")
            if directory == kafka_reference.log_dir:
                LeaderEpochCheckpointFile(file).read()
    hw = OffsetCheckpointFile(written.mini / "replication-offset-checkpoint").read()
    assert hw[TopicPartition(RAW, 0)] == len(written.raw)
    line = f"{RAW} 0 {len(written.raw)}"
    # Kafka writes its high watermarks every replica.high.watermark.checkpoint.interval.ms
    # (5 s): wait for the line, with a deadline.
    path = kafka_reference.log_dir / "replication-offset-checkpoint"
    deadline = time.monotonic() + 15
    while line not in _checkpoint_lines(path, "offset"):
        assert time.monotonic() < deadline, path.read_text()
        time.sleep(0.2)
    assert line in _checkpoint_lines(
        written.mini / "replication-offset-checkpoint", "offset"
    )


def _properties(path: Path) -> dict[str, str]:
    lines = [line for line in path.read_text().splitlines() if line[:1] not in "#"]
    return dict(line.split("=", 1) for line in lines if line)


def test_meta_properties_are_kafkas_but_for_the_directory_id(
    written: Written, kafka_reference: KafkaNode
) -> None:
    # Guarantee: minikafka's meta.properties has Kafka's v1 keys and values of Kafka's
    # shape; the directory id (KIP-858) is the one key it leaves out (COMPAT.md).
    theirs = _properties(kafka_reference.log_dir / "meta.properties")
    ours = _properties(written.mini / "meta.properties")
    assert set(theirs) - set(ours) == {"directory.id"}
    assert set(ours) <= set(theirs)
    assert ours["version"] == theirs["version"] == "1"
    assert len(ours["cluster.id"]) == len(theirs["cluster.id"]) == 22


def test_the_files_only_kafka_writes_are_the_ones_compat_lists(
    written: Written, kafka_reference: KafkaNode
) -> None:
    # Guarantee: COMPAT.md's list of the files Kafka writes and minikafka does not
    # (partition.metadata, bootstrap.checkpoint) is complete and still true; a change
    # to either side fails here until it is updated. Both write producer-state
    # .snapshot files.
    def kinds(directory: Path) -> set[str]:
        """The partition's files, segments and indexes left out, snapshots as one."""
        names = set()
        for p in directory.iterdir():
            if p.suffix == ".snapshot":
                names.add("*.snapshot")
            elif p.suffix not in (".log", ".index", ".timeindex"):
                names.add(p.name)
        return names

    kafka_partition = written.kafka / f"{CLIENT}-0"
    mini_partition = written.mini / f"{CLIENT}-0"
    assert kinds(kafka_partition) - kinds(mini_partition) == {"partition.metadata"}
    assert "*.snapshot" in kinds(mini_partition)
    assert kinds(mini_partition) <= kinds(kafka_partition)
    top = {p.name for p in kafka_reference.log_dir.iterdir() if p.is_file()}
    ours = {p.name for p in written.mini.iterdir() if p.is_file()}
    assert top - ours == {"bootstrap.checkpoint", ".lock"}
    # the clean-shutdown marker (Kafka's only once stopped) and the replica fetchers'
    # state, minikafka's own file
    assert ours - top <= {".kafka_cleanshutdown", "replica-fetcher-state.json"}


def test_kafka_cannot_decode_minikafkas_metadata_records(written: Written) -> None:
    # Guarantee (a difference COMPAT.md states): the metadata log's batches are valid
    # for Kafka (see above), but its records are minikafka's encoding of a subset of
    # Kafka's record types: Kafka's metadata decoder reads each one's frame and type
    # and fails on its fields. If this starts to pass, COMPAT.md and the KRaft chapter
    # must say so.
    log = written.mini / "__cluster_metadata-0"
    segments = sorted(log.glob("*.log"))
    dumped, stderr = _dump_files(_segment_files(log), "--cluster-metadata-decoder")
    _check_files(log, dumped, stderr)  # batches and indexes as Kafka writes them
    # What minikafka wrote: each value one of its own metadata records.
    stored = []
    leader_changes = 0
    for segment in segments:
        data = segment.read_bytes()
        for position, header in iter_batches(data):
            if header.is_control:
                leader_changes += 1  # the Raft quorum's own: Kafka reads it (below)
                continue
            for kept in decode_batch(data[position : position + header.size])[1]:
                assert kept.value is not None
                stored.append(decode_record(kept.value))
    assert {type(r).API_KEY for r in stored} <= set(RECORD_TYPES)
    dumped_records = [r for segment in segments for r in _flat(dumped[segment])]
    # Guarantee: each new leader's LeaderChange control record is Kafka's message, which
    # Kafka's tool decodes (this node alone: leader 1, its only voter, voting for itself).
    controls = [r for r in dumped_records if r.control is not None]
    assert len(controls) == leader_changes > 0
    for record in controls:
        assert record.control == (
            "LeaderChange",
            '{"version":0,"leaderId":1,"voters":[{"voterId":1}],'
            '"grantingVoters":[{"voterId":1}]}',
        )
    records = [r for r in dumped_records if r.control is None]
    assert len(records) == len(stored) > 0
    for record in records:
        # "Failed to deserialize record with type N", or fields read into another shape
        # ("Found 1 byte(s) of garbage after ..."): never a record Kafka understood.
        error = f"Error at {record.fields['offset']}, skipping. "
        assert (record.payload or "").startswith(error), record
