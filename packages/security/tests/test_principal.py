"""KafkaPrincipal and ssl.principal.mapping.rules (Kafka's SslPrincipalMapper, KIP-371)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.security import (
    ANONYMOUS,
    KafkaPrincipal,
    NoMatchingRuleError,
    SslPrincipalMapper,
    distinguished_name,
    parse_mapping_rules,
)

names = st.text(st.characters(codec="utf-8"), min_size=1)


@given(
    st.text(st.characters(codec="utf-8"), min_size=1).filter(lambda t: ":" not in t),
    names,
)
def test_a_principal_prints_and_parses_back_at_its_first_colon(
    kind: str, name: str
) -> None:
    """``Type:name`` round-trips for any name, colons in the name included."""
    principal = KafkaPrincipal(kind, name)
    assert KafkaPrincipal.from_string(str(principal)) == principal


def test_a_principal_without_a_colon_is_refused_with_kafkas_message() -> None:
    """SecurityUtils.parseKafkaPrincipal's message, naming what was given."""
    with pytest.raises(ValueError, match="principalType:principalName but got alice"):
        KafkaPrincipal.from_string("alice")


def test_token_authentication_does_not_change_who_a_principal_is() -> None:
    """Equality is type and name only, as Kafka's equals; ANONYMOUS is User:ANONYMOUS."""
    assert KafkaPrincipal("User", "a", token_authenticated=True) == KafkaPrincipal(
        "User", "a"
    )
    assert str(ANONYMOUS) == "User:ANONYMOUS"


@given(st.text(min_size=1))
def test_default_gives_the_distinguished_name_unchanged(dn: str) -> None:
    """The default rules (``DEFAULT``) map any subject to itself."""
    assert SslPrincipalMapper.from_rules().principal_name(dn) == dn


@pytest.mark.parametrize(
    ("rules", "dn", "name"),
    [
        (
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT",
            "CN=kafka-broker,OU=ServiceUsers,O=Acme",
            "kafka-broker",
        ),
        (
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT",
            "CN=alice,OU=People,O=Acme",
            "CN=alice,OU=People,O=Acme",
        ),
        (
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$3/L",
            "CN=Alice,OU=Eng,O=ACME",
            "alice@acme",
        ),
        ("RULE:^CN=(.*?),OU=(.*?)$/$1/U", "CN=bob,OU=x", "BOB"),
        (
            "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$3/L, DEFAULT",
            "cn=Carol,ou=p,dc=example,dc=com",
            "carol@example",
        ),
        (r"RULE:^CN=([^,]*).*$/svc\/$1/", "CN=x,O=y", "svc/x"),
        ("RULE:^CN=(?<who>[^,]*).*$/${who}!/", "CN=z,O=y", "z!"),
        ("RULE:^CN=(.*?),O=(.*)$/$1@$4/", "CN=a,O=b", "a@$4"),
        ("RULE:^CN=(.*?),O=(.*)$/$12/", "CN=a,O=b", "a2"),
        (" , DEFAULT , ", "CN=a", "CN=a"),
    ],
)
def test_the_first_matching_rule_gives_the_name(rules: str, dn: str, name: str) -> None:
    """Kafka's documented examples: groups, case flags, an escaped slash, commas inside
    a pattern kept in their rule, Java's named groups, a reference to a group the
    pattern lacks kept literal, ``$12`` read as group 1 then ``2`` when there is no group
    12, and empty rules ignored."""
    assert SslPrincipalMapper.from_rules(rules).principal_name(dn) == name


def test_a_subject_no_rule_matches_is_refused() -> None:
    """Without DEFAULT, an unmatched subject has no principal: Kafka's NoMatchingRule."""
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=(.*)$/$1/")
    with pytest.raises(
        NoMatchingRuleError, match=r"No rules apply to O=x, rules \[RULE:\^CN"
    ):
        mapper.principal("O=x")
    assert mapper.principal("CN=a") == KafkaPrincipal("User", "a")


@pytest.mark.parametrize(
    ("rules", "unmatched"),
    [
        ("RULE:abc", "RULE:abc"),
        ("RULE:a/b/X", "X"),
        ("BOGUS", "BOGUS"),
        ("RULE:(/x/", None),
    ],
)
def test_a_malformed_rule_is_refused_at_parse(
    rules: str, unmatched: str | None
) -> None:
    """A rule that is neither DEFAULT nor RULE:pattern/replacement/[LU] is refused with
    Kafka's message naming what did not match; a pattern that does not compile too."""
    text = (
        "Invalid rule" if unmatched is None else f"unmatched substring: `{unmatched}`"
    )
    with pytest.raises(ValueError, match=re.escape(text)):
        parse_mapping_rules(rules)


def test_a_python_certificate_subject_becomes_rfc_2253() -> None:
    """ssl's getpeercert() subject (C first) prints as X500Principal.getName() (CN first),
    special characters escaped."""
    subject = (
        (("countryName", "US"),),
        (("organizationName", "Acme, Inc."),),
        (("commonName", "alice"),),
    )
    assert distinguished_name(subject) == r"CN=alice,O=Acme\, Inc.,C=US"
