"""The whole corpus, in the order it runs: data path, groups, admin."""

from __future__ import annotations

from ._corpus_admin import scenarios as admin
from ._corpus_data import scenarios as data
from ._corpus_groups import scenarios as groups
from ._scenario import Scenario


def corpus() -> list[Scenario]:
    return [*data(), *groups(), *admin()]
