"""What ApiVersions v3+ tells of features (KIP-584), on a broker's listeners and on a
controller's: the levels this node runs (``SUPPORTED_FEATURES``) and the levels the
cluster finalized, read from a metadata image, whose offset is their epoch."""

from __future__ import annotations

from minikafka.controller import SUPPORTED_FEATURES, MetadataImage
from minikafka.net import Features


def image_features(image: MetadataImage) -> Features:
    """The features to advertise when ``image`` is the newest metadata this node has
    (a level of 0 is a feature switched off: not finalized)."""
    finalized = tuple(sorted((n, v) for n, v in image.features.items() if v > 0))
    return Features(SUPPORTED_FEATURES, finalized, image.offset)
