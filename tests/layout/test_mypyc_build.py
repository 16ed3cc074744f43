"""The optional mypyc build's guard (``scripts/build_mypyc.py --check``, which ``make
test-mypyc`` runs before the tests): tests that ran on the pure modules, or on a copy older
than the source, must not pass for the compiled build's."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def build_mypyc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The script, imported fresh, with its build directory in ``tmp_path``."""
    spec = importlib.util.spec_from_file_location(
        "build_mypyc", ROOT / "scripts" / "build_mypyc.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "BUILD", tmp_path)
    monkeypatch.setattr(module, "MANIFEST", tmp_path / "manifest.json")
    return module


def _write_manifest(script: ModuleType, sources: dict[str, str]) -> None:
    manifest = {"compiled": list(script.COMPILED), "sources": sources}
    script.MANIFEST.write_text(json.dumps(manifest))


def test_every_compiled_module_is_a_source_file_of_a_copied_package(
    build_mypyc: ModuleType,
) -> None:
    for name in build_mypyc.COMPILED:
        package = name.rsplit(".", 1)[0]
        assert package in build_mypyc.PACKAGES, name
        source = ROOT / build_mypyc.PACKAGES[package] / build_mypyc.module_path(name)
        assert source.is_file(), source


def test_no_build_at_all_is_reported(build_mypyc: ModuleType) -> None:
    assert build_mypyc.check() == [
        f"no mypyc build in {build_mypyc.BUILD} (make mypyc)"
    ]


def test_modules_imported_from_their_source_are_reported(
    build_mypyc: ModuleType,
) -> None:
    """A current manifest, but this process imports the source tree's ``.py`` files (or
    another directory's build): each compiled module is named, so the tests that follow
    the check cannot pass for a build they did not run on."""
    _write_manifest(build_mypyc, build_mypyc.source_digests())
    problems = build_mypyc.check()
    assert [p.split(" ", 1)[0] for p in problems] == list(build_mypyc.COMPILED)
    assert all("not the mypyc build" in p for p in problems)


def test_a_copy_older_than_the_source_is_reported(build_mypyc: ModuleType) -> None:
    sources = build_mypyc.source_digests()
    sources["minikafka/net/_framing.py"] = "0" * 64  # the copy of an older _framing.py
    _write_manifest(build_mypyc, sources)
    assert (
        "the build's copy differs from the source (make mypyc)" in build_mypyc.check()
    )
