"""Lab 3's reference for the purgatory: minikafka's own (the Produce and Fetch
chapters)."""

from minikafka.replication._delayed import DelayedFetch, DelayedProduce

delayed_produce_try_complete = DelayedProduce.try_complete
delayed_fetch_try_complete = DelayedFetch.try_complete
