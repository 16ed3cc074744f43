"""Subscriptions by regular expression in a consumer group (KIP-848, Kafka 4.0).

A member may subscribe with ``SubscribedTopicRegex`` (ConsumerGroupHeartbeat v1)
instead of, or beside, topic names. The member never lists the topics: the coordinator
resolves each regular expression its members use against the cluster's topics (a topic
is in when the expression matches its whole name), keeps the resolution per expression,
not per member, and writes it as a ConsumerGroupRegularExpression record (type 16; key:
group and expression; value: the topics, the metadata version and the time it was
resolved), so a new coordinator loads it after failover. A member's topics are then its
names plus its expression's resolution (:func:`expand`), and everything downstream (the
subscribed topics' metadata, the epoch bumps, the assignor) sees only topic names.

When an expression is resolved again (:meth:`RegexSubscriptions.refresh`, Kafka's
``GroupMetadataManager.maybeUpdateRegularExpressions``): when some member uses one the
group has not resolved yet, or when the cluster's topics changed since the last
resolution; and, as Kafka batches them, not sooner than ``REGEX_BATCH_REFRESH_INTERVAL_MS``
after the last one. Kafka resolves on an executor and applies the result in a later
write; this core resolves within the heartbeat that needs it, so the member that brings
a new expression is given its topics in the same answer. A resolution that changes some
member's topics moves the group epoch (through :func:`expand` and ``epoch_bumps``).

Kafka compiles expressions with RE2/J; this module accepts a stated subset of RE2/J's
syntax and runs it on Python's ``re`` (:func:`compile_re2j`). What RE2/J refuses
(lookarounds, backreferences, possessive quantifiers, atomic groups, conditionals,
counts over 1000) is refused with RE2/J's description, and the heartbeat is answered
INVALID_REGULAR_EXPRESSION, as Kafka's ``throwIfRegularExpressionIsInvalid`` does.
"""

from __future__ import annotations

import re
import struct
import unicodedata
from collections.abc import Callable, Iterable, Mapping

import attrs

from ._target_assignment import MemberSubscription

__all__ = [
    "REGEX_BATCH_REFRESH_INTERVAL_MS",
    "REGULAR_EXPRESSION",
    "InvalidRegex",
    "RegexSubscriptions",
    "ResolvedRegularExpression",
    "compile_re2j",
    "expand",
    "regex_error_message",
]

REGULAR_EXPRESSION = 16
"""The ConsumerGroupRegularExpression record's type (its key's version)."""

REGEX_BATCH_REFRESH_INTERVAL_MS = 10_000
"""Kafka's ``GroupMetadataManager.REGEX_BATCH_REFRESH_INTERVAL_MS``."""

MAX_REPEAT = 1000
"""RE2's largest repetition count: ``a{1001}`` is a bad repetition operator."""


class InvalidRegex(ValueError):
    """RE2/J's ``PatternSyntaxException``: ``description`` is its ``getDescription()``."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


# Python's words for what RE2/J calls otherwise (its Parser's ERR_* descriptions, as
# Kafka 4.1 answers them).
_RE2J_WORDS = (
    ("missing ), unterminated subpattern", "missing closing )"),
    ("unbalanced parenthesis", "regexp/syntax: internal error"),
    ("unterminated character set", "missing closing ]"),
    ("nothing to repeat", "missing argument to repetition operator"),
    ("multiple repeat", "invalid nested repetition operator"),
    ("bad character range", "invalid character class range"),
    ("bad escape", "invalid escape sequence"),
    ("min repeat greater than max repeat", "invalid repeat count"),
)
_PERL = "invalid or unsupported Perl syntax"
_ESCAPE = "invalid escape sequence"
_RANGE = "invalid character class range"
_POSSESSIVE = re.compile(r"(?:[*+?]|\{\d+(?:,\d*)?\})\+")
_COUNTS = re.compile(r"\{(\d+)(?:,(\d*))?\}")
_ASCII = [chr(n) for n in range(1, 128)]  # a topic name never holds NUL
_CATEGORIES = frozenset(
    [
        "L",
        "Lu",
        "Ll",
        "Lt",
        "Lm",
        "Lo",
        "M",
        "Mn",
        "Mc",
        "Me",
        "N",
        "Nd",
        "Nl",
        "No",
        "P",
        "Pc",
        "Pd",
        "Ps",
        "Pe",
        "Pi",
        "Pf",
        "Po",
        "S",
        "Sm",
        "Sc",
        "Sk",
        "So",
        "Z",
        "Zs",
        "Zl",
        "Zp",
        "C",
        "Cc",
        "Cf",
        "Co",
        "Cs",
    ]
)
_SCRIPTS_OUTSIDE_ASCII = frozenset(
    [
        "Arabic",
        "Armenian",
        "Bengali",
        "Cyrillic",
        "Devanagari",
        "Georgian",
        "Greek",
        "Gujarati",
        "Han",
        "Hangul",
        "Hebrew",
        "Hiragana",
        "Kannada",
        "Katakana",
        "Khmer",
        "Lao",
        "Malayalam",
        "Tamil",
        "Telugu",
        "Thai",
        "Tibetan",
    ]
)
_POSIX: dict[str, Callable[[str], bool]] = {
    "alnum": str.isalnum,
    "alpha": str.isalpha,
    "ascii": lambda c: True,
    "blank": lambda c: c in " \t",
    "cntrl": lambda c: ord(c) < 32 or c == "\x7f",
    "digit": str.isdigit,
    "graph": lambda c: "!" <= c <= "~",
    "lower": str.islower,
    "print": lambda c: " " <= c <= "~",
    "punct": lambda c: "!" <= c <= "~" and not c.isalnum(),
    "space": lambda c: c in " \t\n\v\f\r",
    "upper": str.isupper,
    "word": lambda c: c.isalnum() or c == "_",
    "xdigit": lambda c: c in "0123456789abcdefABCDEF",
}


def _unicode_members(name: str) -> list[str]:
    r"""The ASCII characters of RE2/J's ``\p{name}``: topic names are ASCII, so a
    class's ASCII part is all a topic name can match."""
    if name == "Any":
        return _ASCII
    if name in _CATEGORIES:
        return [c for c in _ASCII if unicodedata.category(c).startswith(name)]
    if name == "Latin":
        return [c for c in _ASCII if c.isalpha()]
    if name == "Common":
        return [c for c in _ASCII if not c.isalpha()]
    if name in _SCRIPTS_OUTSIDE_ASCII:
        return []
    raise InvalidRegex(_RANGE)


def _as_set(members: list[str], negated: bool, in_class: bool) -> str:
    """``members`` (ASCII) as what goes inside a class, or as a class of its own."""
    if negated:
        members = [c for c in _ASCII if c not in members]
    inner = "".join(re.escape(c) for c in members) or "\\x00"
    return inner if in_class else f"[{inner}]"


def _group_opening(pattern: str, i: int) -> tuple[str, int]:
    """What ``(?`` at ``i`` opens, in Python's syntax, and where it ends."""
    rest = pattern[i + 2 :]
    if rest.startswith((":", "P<")):
        return "(?" + rest[0], i + 3
    if rest.startswith("<"):
        if rest.startswith(("<=", "<!")):
            raise InvalidRegex("invalid named capture")
        return "(?P<", i + 3
    flags = re.match(r"[a-zA-Z-]*[:)]", rest)
    if flags is None or not flags.group()[:-1]:
        raise InvalidRegex(_PERL)  # lookaheads, atomic groups, (?P=, (?(, (?#
    if set(flags.group()[:-1]) - set("imsU-"):
        raise InvalidRegex(_PERL)
    # ungreedy (U) changes which match is found, never whether a whole name matches
    kept = flags.group().replace("U", "")
    if kept[:-1] in ("", "-"):
        return ("(?:" if kept.endswith(":") else "(?:)"), i + 2 + len(flags.group())
    return "(?" + kept, i + 2 + len(flags.group())


def _translate(pattern: str) -> str:
    """``pattern`` in Python's syntax, or :class:`InvalidRegex` for what RE2/J
    refuses; one pass over it, so an escaped character is never read as syntax."""
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            e = pattern[i + 1 : i + 2]
            if e == "Q":
                end = pattern.find("\\E", i + 2)
                stop = n if end < 0 else end
                literal = pattern[i + 2 : stop]
                out.append("".join(re.escape(ch) for ch in literal))
                i = n if end < 0 else end + 2
            elif e in ("p", "P"):
                named = re.match(r"\{(\^?)(\w+)\}|(\w)", pattern[i + 2 :])
                if named is None:
                    raise InvalidRegex(_RANGE)
                negated = (e == "P") != bool(named.group(1))
                members = _unicode_members(named.group(2) or named.group(3))
                out.append(_as_set(members, negated, in_class))
                i += 2 + len(named.group())
            elif not e:
                raise InvalidRegex("trailing backslash at end of expression")
            elif (e.isdigit() and e != "0") or e in ("Z", "C"):
                raise InvalidRegex(_ESCAPE)
            else:
                out.append("\\Z" if e == "z" else pattern[i : i + 2])
                i += 2
        elif in_class:
            posix = re.match(r"\[:(\^?)([a-z]+):\]", pattern[i:])
            if posix is not None:
                test = _POSIX.get(posix.group(2))
                if test is None:
                    raise InvalidRegex(_RANGE)
                members = [ch for ch in _ASCII if test(ch)]
                out.append(_as_set(members, bool(posix.group(1)), True))
                i += len(posix.group())
                continue
            in_class = c != "]"
            out.append(c)
            i += 1
        elif c == "[":
            in_class = True
            opening = re.match(r"\[\^?\]?", pattern[i:])
            assert opening is not None
            out.append(opening.group().replace("]", "\\]"))
            i += len(opening.group())
        elif pattern.startswith("{,", i):
            out.append("\\{")  # Python reads {,n} as {0,n}; RE2/J as a literal
            i += 1
        elif pattern.startswith("(?", i):
            opened, i = _group_opening(pattern, i)
            out.append(opened)
        else:
            out.append(c)
            i += 1
    return "".join(out)


MAX_UNBOUNDED = 3
"""At most this many unbounded repetitions (``*``, ``+``, ``{n,}``) in a pattern."""
_NESTED = (
    "nested repetition is not supported by this broker (a repeated group holding a "
    "repetition or an alternation)"
)
_QUANTIFIER = re.compile(r"[*+?]|\{(\d+)(,(\d*))?\}")


def _refuse_backtracking(translated: str) -> None:
    """Refuse what Python's backtracking ``re`` could take exponential (or high
    polynomial) time to match where RE2/J, an automaton, takes linear time: a repeated
    group that holds a repetition or an alternation (``(a+)+``, ``(a|aa)*``), and more
    than :data:`MAX_UNBOUNDED` unbounded repetitions. ``translated`` is already a valid
    Python pattern. RE2/J accepts these; a topic name is at most 249 characters, so
    anything else matches in bounded time."""
    frames: list[list[bool]] = [[False]]  # per open group: holds a repetition or a |
    closed: list[bool] | None = None  # the group that just closed, if the last atom
    unbounded, i, n = 0, 0, len(translated)
    while i < n:
        c = translated[i]
        quantifier = _QUANTIFIER.match(translated, i)
        if quantifier is not None and i > 0 and translated[i - 1] not in "(|":
            q = quantifier.group()
            bounded_max = (
                quantifier.group(3) if quantifier.group(2) else quantifier.group(1)
            )
            repeats = q in "*+" or (
                q != "?" and (not bounded_max or int(bounded_max) > 1)
            )
            if q in "*+" or (quantifier.group(2) and not quantifier.group(3)):
                unbounded += 1
            if repeats:
                if closed is not None and closed[0]:
                    raise InvalidRegex(_NESTED)
                frames[-1][0] = True
            i += len(q)
            if translated.startswith("?", i):  # lazy
                i += 1
            closed = None
            continue
        closed = None
        if c == "\\":
            i += 2
        elif c == "[":
            end = re.match(r"\[\^?\]?(?:\\.|[^\]])*\]", translated[i:])
            i += len(end.group()) if end else 1
        elif c == "(":
            flags_only = re.match(r"\(\?[a-zA-Z-]*\)", translated[i:])
            if flags_only is not None:
                i += len(flags_only.group())
                continue
            frames.append([False])
            opening = re.match(r"\((?:\?(?:[:a-zA-Z-]*:|P<\w+>))?", translated[i:])
            i += len(opening.group()) if opening else 1
        elif c == ")":
            closed = frames.pop() if len(frames) > 1 else [False]
            frames[-1][0] = frames[-1][0] or closed[0]
            i += 1
        else:
            if c == "|":
                frames[-1][0] = True
            i += 1
    if unbounded > MAX_UNBOUNDED:
        raise InvalidRegex(
            f"more than {MAX_UNBOUNDED} unbounded repetitions are not supported by "
            "this broker"
        )


def compile_re2j(pattern: str) -> re.Pattern[str]:
    r"""``pattern`` compiled as RE2/J would read it, or :class:`InvalidRegex` with
    RE2/J's description.

    The subset, all of RE2/J's syntax that can tell two topic names apart: literals,
    ``.``, classes (with POSIX ``[:alpha:]`` names and Unicode ``\pL``,
    ``\p{Greek}``, read over ASCII, the only characters of a topic name), ``\d \w \s
    \b \A \z`` and their negations (ASCII, as RE2/J's), groups (capturing, ``(?:...)``,
    ``(?P<name>...)``, ``(?<name>...)``), alternation, greedy and lazy quantifiers with
    counts up to 1000, the flags ``i m s U``, ``\Q...\E``. Refused as RE2/J refuses
    them: lookarounds, backreferences, atomic groups, possessive quantifiers,
    conditionals, comments, ``\Z`` and ``\C``. Refused although RE2/J takes them,
    because a backtracking matcher may not finish in time: nested repetition and
    more than three unbounded repetitions (``_refuse_backtracking``)."""
    possessive = _POSSESSIVE.search(pattern)
    if possessive is not None:
        raise InvalidRegex("invalid nested repetition operator")
    for count in _COUNTS.finditer(pattern):
        low, high = count.group(1), count.group(2)
        if any(int(x) > MAX_REPEAT for x in (low, high) if x):
            raise InvalidRegex("invalid repeat count")
    translated = _translate(pattern)
    try:
        compiled = re.compile(translated, re.ASCII)
    except re.error as e:
        message = str(e.msg)
        for python, re2j in _RE2J_WORDS:
            if message.startswith(python):
                raise InvalidRegex(re2j) from e
        raise InvalidRegex(message) from e
    _refuse_backtracking(translated)
    return compiled


def regex_error_message(pattern: str) -> str | None:
    """Kafka's INVALID_REGULAR_EXPRESSION message for ``pattern``; None if valid."""
    try:
        compile_re2j(pattern)
    except InvalidRegex as e:
        return (
            f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: "
            f"{e.description}."
        )
    return None


@attrs.frozen
class ResolvedRegularExpression:
    """The ConsumerGroupRegularExpression record's value (Kafka's
    ``ResolvedRegularExpression``): the topics, the metadata version resolved against,
    and when (wall clock, ms)."""

    topics: frozenset[str]
    version: int = -1
    timestamp_ms: int = 0


def used_regexes(subscriptions: Mapping[str, MemberSubscription]) -> set[str]:
    """The expressions some member subscribes with ("" is no expression)."""
    return {
        s.subscribed_topic_regex
        for s in subscriptions.values()
        if s.subscribed_topic_regex
    }


def expand(
    subscriptions: Mapping[str, MemberSubscription],
    resolved: Mapping[str, ResolvedRegularExpression],
) -> dict[str, MemberSubscription]:
    """Each member's subscription with its expression's topics among its names: what
    the group's metadata, its epoch and its assignor are computed from."""
    out = {}
    for member_id, s in subscriptions.items():
        regex = s.subscribed_topic_regex
        found = resolved.get(regex) if regex else None
        out[member_id] = (
            s
            if found is None
            else attrs.evolve(
                s, subscribed_topic_names=s.subscribed_topic_names | found.topics
            )
        )
    return out


@attrs.define
class RegexSubscriptions:
    """A consumer group's resolved expressions, and the topics they were resolved
    against (not written: after a load the first heartbeat resolves them again)."""

    resolved: dict[str, ResolvedRegularExpression] = attrs.field(factory=dict)
    resolved_against: frozenset[str] | None = None

    def forget_unused(self, subscriptions: Mapping[str, MemberSubscription]) -> None:
        """Drop the resolutions of the expressions no member uses any more."""
        wanted = used_regexes(subscriptions)
        self.resolved = {r: v for r, v in self.resolved.items() if r in wanted}

    def refresh(
        self,
        subscriptions: Mapping[str, MemberSubscription],
        topics: Iterable[str],
        now: float,
        version: int = -1,
    ) -> bool:
        """Drop the expressions no member uses, and resolve them all again when one
        is new or the topics changed, at most once per batch interval. Returns
        whether the resolutions changed (new records to write)."""
        wanted = used_regexes(subscriptions)
        before = dict(self.resolved)
        self.forget_unused(subscriptions)
        names = frozenset(topics)
        stale = wanted - self.resolved.keys() or names != self.resolved_against
        now_ms = int(now * 1000)
        last = max((v.timestamp_ms for v in self.resolved.values()), default=None)
        if (
            wanted
            and stale
            and (last is None or now_ms > last + REGEX_BATCH_REFRESH_INTERVAL_MS)
        ):
            self.resolved = resolve(wanted, names, version, now_ms)
            self.resolved_against = names
        return self.resolved != before


def resolve(
    regexes: Iterable[str], topics: Iterable[str], version: int, now_ms: int
) -> dict[str, ResolvedRegularExpression]:
    """Kafka's ``refreshRegularExpressions``: each expression's matching topics (a
    whole-name match). The topics are those the broker offers the group: its
    internal topics are not among them, where Kafka's image lists them too."""
    names = sorted(topics)
    out = {}
    for regex in regexes:
        try:
            compiled = compile_re2j(regex)
        except InvalidRegex:
            continue  # never accepted from a member; a bad record's is ignored
        matched = frozenset(t for t in names if compiled.fullmatch(t))
        out[regex] = ResolvedRegularExpression(matched, version, now_ms)
    return out


# --- the record ----------------------------------------------------------------------


def regex_key(group_id: str, regex: str) -> bytes:
    """ConsumerGroupRegularExpressionKey: the type, the group and the expression."""
    parts = [struct.pack(">h", REGULAR_EXPRESSION)]
    for s in (group_id, regex):
        raw = s.encode()
        parts.append(struct.pack(">h", len(raw)) + raw)
    return b"".join(parts)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def regex_value(resolution: ResolvedRegularExpression) -> bytes:
    """ConsumerGroupRegularExpressionValue v0 (flexible): compact array of compact
    strings, then int64 version and int64 timestamp, then no tagged fields."""
    topics = sorted(resolution.topics)
    body = _uvarint(len(topics) + 1)
    for t in topics:
        raw = t.encode()
        body += _uvarint(len(raw) + 1) + raw
    body += struct.pack(">qq", resolution.version, resolution.timestamp_ms)
    return struct.pack(">h", 0) + body + _uvarint(0)


def regex_records(group_id: str, regexes: RegexSubscriptions) -> dict[bytes, bytes]:
    """The group's resolutions as records, key to value."""
    return {
        regex_key(group_id, regex): regex_value(resolution)
        for regex, resolution in sorted(regexes.resolved.items())
    }
