"""Every lab's wiring, checked against the reference answers (what ``make test`` owes
``make lab``): each lab.toml is valid, each build exercise names real targets and files,
an unfinished exercise is reported by name, a rebuild lab's reference is minikafka's own
code (switched for nothing), and a FrameDecoder written from lab 1's skeleton alone, not
copied from minikafka, passes through the same switch a learner's code takes, as lab 17's
state table and moves written from its skeleton do."""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import pytest

from minikafka.labs import Lab, all_labs, find_lab
from minikafka.labs._runner import SWITCH_DIR, run, switch_spec, table

ROOT = Path(__file__).resolve().parents[2]
BUILD_LABS = [lab for lab in all_labs() if lab.config.kind == "rebuild"]

sys.path.insert(0, str(SWITCH_DIR))
from sitecustomize import load_file  # noqa: E402  (the switch's own loader)


def test_every_lab_config_is_valid_and_follows_a_chapter() -> None:
    assert len(BUILD_LABS) >= 5
    for lab in all_labs():
        config = lab.config
        assert (ROOT / "book" / f"{config.chapter}.md").exists(), lab.name
        assert (ROOT / "book" / "labs" / f"{lab.name}.md").exists(), lab.name
        # What the course map plans with: a time, a difficulty, the reading before.
        assert config.minutes > 0, lab.name
        assert config.difficulty, lab.name
        assert config.chapter in config.after, lab.name
        for chapter in config.after:
            assert (ROOT / "book" / f"{chapter}.md").exists(), (lab.name, chapter)
        if config.kind == "trace":
            exercises = lab.module("exercises")
            for exercise in config.exercises:
                assert callable(getattr(exercises, exercise.name)), exercise.name


@pytest.mark.parametrize("lab", BUILD_LABS, ids=lambda lab: lab.name)
def test_each_build_exercise_names_real_targets_and_files(lab: Lab) -> None:
    for exercise in lab.config.exercises:
        for test in exercise.tests:
            assert (ROOT / test.partition("::")[0]).exists(), test
        for target, source in exercise.replaces.items():
            module, _, name = target.partition(":")
            owner: object = importlib.import_module(module)
            for part in name.split("."):
                owner = getattr(owner, part)
            file, _, attribute = source.rpartition(":")
            for home in (lab.directory,):
                assert hasattr(load_file(home / file), attribute), (home, source)


def test_an_unfinished_exercise_is_reported_by_name() -> None:
    (outcome,) = run(
        find_lab(1), find_lab(1).config.exercises[0], "exercises", quiet=True
    )
    assert not outcome.done
    assert "FrameDecoder.feed" in outcome.not_done
    assert "not done: FrameDecoder.feed" in table([outcome])


def test_a_rebuild_labs_reference_is_minikafkas_own_code() -> None:
    # Nothing is switched for the reference: minikafka's own tests, which the main test
    # run runs anyway, are what a learner's code is checked with.
    for lab in BUILD_LABS:
        assert switch_spec(lab, lab.config.exercises, "solutions") == ""
        assert switch_spec(lab, lab.config.exercises, "exercises")


def test_a_decoder_written_from_the_skeleton_passes_lab_1(tmp_path: Path) -> None:
    written = find_lab(1).solutions / "written_from_the_skeleton.py"
    if not written.exists():
        pytest.skip(
            "a learner's checkout: the written answer is in the instructors' copy"
        )
    mine = tmp_path / "01-framing"
    shutil.copytree(find_lab(1).directory, mine)
    shutil.copy(written, mine / "framing.py")
    (outcome,) = run(Lab(1, mine), None, "exercises", quiet=True)
    assert outcome.exercise == "frame_decoder"
    assert outcome.done, outcome
    assert outcome.passed == outcome.total == outcome.collected > 0


@pytest.mark.timeout(900)
def test_a_state_machine_written_from_the_skeleton_passes_lab_17(
    tmp_path: Path,
) -> None:
    # A module's table (TXN_TRANSITIONS) and methods of an attrs class go through the
    # switch, into the brokers the real client's checks start, as a learner's do.
    written = find_lab(17).solutions / "written_from_the_skeleton"
    if not written.exists():
        pytest.skip(
            "a learner's checkout: the written answer is in the instructors' copy"
        )
    mine = tmp_path / "17-transactions"
    shutil.copytree(find_lab(17).directory, mine)
    for answer in written.glob("*.py"):
        shutil.copy(answer, mine / answer.name)
    outcomes = run(Lab(17, mine), None, "exercises", quiet=True)
    assert [o.exercise for o in outcomes] == [
        "state_table",
        "prepare_and_complete",
        "epoch_fencing",
    ]
    for outcome in outcomes:
        assert outcome.done, outcome
        assert outcome.passed == outcome.total == outcome.collected > 0
