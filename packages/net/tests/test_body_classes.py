"""body_classes: the classes a string alias names, matched by module and name without
importing them; load_body_classes imports them for a test."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kio.schema.metadata.v4.request import MetadataRequest as MetadataRequestV4
from kio.schema.metadata.v5.request import MetadataRequest as MetadataRequestV5
from kio.schema.metadata.v5.response import MetadataResponse as MetadataResponseV5

from minikafka.net import body_classes, is_body

ALIAS = "metadata_v5.MetadataRequest | metadata_v6.MetadataRequest"


def test_an_instance_of_a_named_class_matches_and_no_other() -> None:
    classes = body_classes(ALIAS)
    assert isinstance(object.__new__(MetadataRequestV5), classes)
    assert is_body(object.__new__(MetadataRequestV5), classes)
    # Another version, the response of the same version, anything else: no.
    assert not isinstance(object.__new__(MetadataRequestV4), classes)
    assert not isinstance(object.__new__(MetadataResponseV5), classes)
    assert not is_body("metadata_v5.MetadataRequest", classes)


def test_the_classes_are_imported_only_when_loaded() -> None:
    # In a process of its own: this one may have imported the module already.
    check = (
        "import sys; from minikafka.net import body_classes, load_body_classes;"
        f"c = body_classes({ALIAS!r}); m = 'kio.schema.metadata.v6.request';"
        "assert m not in sys.modules, m;"
        "assert [int(k.__version__) for k in load_body_classes(c)] == [5, 6];"
        "assert m in sys.modules"
    )
    subprocess.run([sys.executable, "-c", check], check=True)


@pytest.mark.parametrize(
    "alias", ["MetadataRequest", "metadata.v5.MetadataRequest", "metadata_v5"]
)
def test_a_member_not_of_the_form_api_vN_class_is_refused(alias: str) -> None:
    with pytest.raises(ValueError, match=r"expected <api>_v<N>\.<Class>"):
        body_classes(alias)


def test_the_alias_must_be_its_string() -> None:
    with pytest.raises(TypeError):
        body_classes(MetadataRequestV5)
