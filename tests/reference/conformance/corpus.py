"""The whole corpus, in the order it runs: data path, deleting records, groups, admin,
configs, cluster, transactions and their
admin reads, then the security APIs and KIP-848's two."""

from __future__ import annotations

from ._corpus_admin import scenarios as admin
from ._corpus_cluster import scenarios as cluster
from ._corpus_configs import scenarios as configs
from ._corpus_data import scenarios as data
from ._corpus_delete_records import scenarios as delete_records
from ._corpus_group_admin import scenarios as group_admin
from ._corpus_groups import scenarios as groups
from ._corpus_security import scenarios as security
from ._corpus_transactions import scenarios as transactions
from ._corpus_txn_admin import scenarios as txn_admin
from ._scenario import Scenario


def corpus() -> list[Scenario]:
    return [
        *data(),
        *delete_records(),
        *groups(),
        *group_admin(),
        *admin(),
        *configs(),
        *cluster(),
        *transactions(),
        *txn_admin(),
        *security(),
    ]
