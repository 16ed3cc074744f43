"""Who a connection is: Kafka's ``KafkaPrincipal`` and the mapping of a certificate's subject.

A principal is a type and a name, written ``User:alice`` (Kafka's ``KafkaPrincipal``,
``SecurityUtils.parseKafkaPrincipal``). A plaintext connection is ``User:ANONYMOUS``; a
SASL connection is ``User:<the authorization id the mechanism settled on>``; an mTLS
connection is ``User:<the client certificate's subject, mapped>``, mapped by the rules of
``ssl.principal.mapping.rules`` (KIP-371, Kafka's ``SslPrincipalMapper``): a list of
``RULE:pattern/replacement/[LU]`` and ``DEFAULT``, tried in order; the first whose
pattern matches the whole distinguished name gives the name (``L`` lower-cases it, ``U``
upper-cases it), ``DEFAULT`` gives the name unchanged, and a name no rule matches is
refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

USER_TYPE = "User"
"""``KafkaPrincipal.USER_TYPE``."""


@attrs.frozen(order=True)
class KafkaPrincipal:
    """A principal: ``principal_type:name`` (Kafka's ``KafkaPrincipal``).

    Two principals are equal when type and name are; whether the session was
    authenticated with a delegation token does not take part, as in Kafka's ``equals``.
    """

    principal_type: str
    name: str
    token_authenticated: bool = attrs.field(default=False, eq=False, order=False)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def from_string(cls, text: str) -> KafkaPrincipal:
        """Parse ``Type:name`` at its first colon (``SecurityUtils.parseKafkaPrincipal``)."""
        if not text or ":" not in text:
            raise ValueError(
                "expected a string in format principalType:principalName but got "
                + text
            )
        principal_type, name = text.split(":", 1)
        return cls(principal_type, name)


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
"""The principal of an unauthenticated (PLAINTEXT, or SSL without a client certificate)
connection."""

WILDCARD_PRINCIPAL = KafkaPrincipal(USER_TYPE, "*")
"""``User:*``: an ACL for it applies to every user."""


class NoMatchingRuleError(ValueError):
    """No rule of ``ssl.principal.mapping.rules`` applies to a distinguished name; Kafka
    refuses the connection's principal (``SslPrincipalMapper.NoMatchingRule``)."""


# One rule, as Kafka's RULE_PATTERN reads it: DEFAULT, or RULE:pattern/replacement/ then an
# optional L or U. A pattern or replacement may hold any character but "/" and "\\", or a
# backslash-escaped one; whatever follows is an error.
_RULE = re.compile(
    r"(?P<default>DEFAULT)"
    r"|RULE:(?P<pattern>(?:\\.|[^\\/])*)/(?P<replacement>(?:\\.|[^\\/])*)/(?P<case>[LU]?)"
)
# Java names a group (?<name>...); Python's re spells it (?P<name>...).
_JAVA_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>")


@attrs.frozen
class MappingRule:
    """One rule of ``ssl.principal.mapping.rules``; ``pattern`` None is ``DEFAULT``."""

    pattern: re.Pattern[str] | None
    replacement: str = ""
    case: str = ""
    source: str = ""
    """The pattern as written (Java's syntax), for the rule's text."""

    def apply(self, distinguished_name: str) -> str | None:
        """The mapped name, or None when the pattern does not match the whole name."""
        if self.pattern is None:
            return distinguished_name
        match = self.pattern.fullmatch(distinguished_name)
        if match is None:
            return None
        name = _expand(match, self.replacement)
        if self.case == "L":
            return name.lower()
        if self.case == "U":
            return name.upper()
        return name

    def __str__(self) -> str:
        if self.pattern is None:
            return "DEFAULT"
        flag = f"/{self.case}" if self.case else ""
        return f"RULE:{self.source}/{self.replacement}{flag}"


def _expand(match: re.Match[str], replacement: str) -> str:
    """A Java replacement string for one match, as ``Matcher.replaceAll`` reads it:
    ``\\x`` is a literal x, ``${name}`` a named group, ``$`` and digits the longest
    group number that exists; a reference to a group the pattern lacks stays literal
    (Kafka's ``escapeLiteralBackReferences``)."""
    groups = match.re.groups
    out: list[str] = []
    i = 0
    while i < len(replacement):
        char = replacement[i]
        following = replacement[i + 1 : i + 2]
        if char == "\\" and following:
            out.append(following)
            i += 2
        elif char == "$" and following == "{" and "}" in replacement[i:]:
            end = replacement.index("}", i)
            name = replacement[i + 2 : end]
            if name in match.re.groupindex:
                out.append(match.group(name) or "")
            else:
                out.append(replacement[i : end + 1])
            i = end + 1
        elif char == "$" and following.isdigit() and int(following) <= groups:
            number, j = int(following), i + 2
            while j < len(replacement) and replacement[j].isdigit():
                longer = number * 10 + int(replacement[j])
                if longer > groups:
                    break
                number, j = longer, j + 1
            out.append(match.group(number) or "")
            i = j
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _split_rules(text: str) -> list[str]:
    """The rules of the config value, separated by commas; a comma inside a rule's
    pattern or replacement (before the ``/`` that closes the replacement) is kept."""
    rules: list[str] = []
    current: list[str] = []
    slashes = 0
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            current.append(text[i : i + 2])
            i += 2
            continue
        if char == "/":
            slashes += 1
        inside = "".join(current).lstrip().startswith("RULE:") and slashes < 2
        if char == "," and not inside:
            rules.append("".join(current))
            current, slashes = [], 0
        else:
            current.append(char)
        i += 1
    rules.append("".join(current))
    return [rule.strip() for rule in rules]


def parse_mapping_rules(text: str | Iterable[str]) -> tuple[MappingRule, ...]:
    """Parse ``ssl.principal.mapping.rules`` (default ``DEFAULT``); empty rules are
    ignored and a malformed one raises ValueError with ``SslPrincipalMapper.parseRules``'s
    message."""
    raw = _split_rules(text) if isinstance(text, str) else [r.strip() for r in text]
    rules = []
    for rule in raw:
        if not rule:
            continue
        found = _RULE.match(rule)
        end = 0 if found is None else found.end()
        if end != len(rule):
            raise ValueError(
                f"Invalid rule: `{rule}`, unmatched substring: `{rule[end:]}`"
            )
        assert found is not None
        if found["default"]:
            rules.append(MappingRule(None))
            continue
        source = found["pattern"]
        try:
            pattern = re.compile(_JAVA_NAMED_GROUP.sub(r"(?P<\1>", source))
        except re.error as exc:
            raise ValueError(f"Invalid rule: {rule}") from exc
        rules.append(MappingRule(pattern, found["replacement"], found["case"], source))
    return tuple(rules)


@attrs.frozen
class SslPrincipalMapper:
    """``ssl.principal.mapping.rules`` applied to a distinguished name (RFC 2253 form,
    what Java's ``X500Principal.getName()`` gives: ``CN=alice,OU=eng,O=acme``)."""

    rules: tuple[MappingRule, ...]

    @classmethod
    def from_rules(cls, text: str | Iterable[str] = "DEFAULT") -> SslPrincipalMapper:
        return cls(parse_mapping_rules(text))

    def principal_name(self, distinguished_name: str) -> str:
        for rule in self.rules:
            name = rule.apply(distinguished_name)
            if name is not None:
                return name
        listed = "[" + ", ".join(str(rule) for rule in self.rules) + "]"
        raise NoMatchingRuleError(
            f"No rules apply to {distinguished_name}, rules {listed}"
        )

    def principal(self, distinguished_name: str) -> KafkaPrincipal:
        """The principal of an mTLS client (Kafka's ``DefaultKafkaPrincipalBuilder``)."""
        return KafkaPrincipal(USER_TYPE, self.principal_name(distinguished_name))


_SHORT_NAMES = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
"""RFC 2253's keywords for the attribute names Python's ``ssl`` reports."""


def _escape(value: str) -> str:
    escaped = "".join("\\" + c if c in ',+"\\<>;=' else c for c in value)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def distinguished_name(
    subject: Iterable[Iterable[tuple[str, str]]],
) -> str:
    """The RFC 2253 string of a subject as ``ssl.SSLSocket.getpeercert()`` gives it
    (relative names in certificate order, most significant first): last first, joined
    by commas, a multi-valued name's parts by ``+``, as ``X500Principal.getName()``."""
    names = [
        "+".join(f"{_SHORT_NAMES.get(key, key)}={_escape(value)}" for key, value in rdn)
        for rdn in subject
    ]
    return ",".join(reversed(names))
