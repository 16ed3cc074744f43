"""RE2/J's syntax on Python's ``re``: the regular expressions a consumer group's
members subscribe with (KIP-848), compiled as Kafka compiles them, with RE2/J
(``com.google.re2j.Pattern``), so that the same patterns are refused with the same words.

One pass over the pattern (:func:`compile_re2j`) refuses what RE2/J refuses
(lookarounds, backreferences, atomic groups, possessive quantifiers, conditionals) with
its description, and turns what RE2/J has and Python lacks (``\\Q...\\E``, POSIX and
Unicode classes, the ``U`` flag, ``(?<name>``) into Python's syntax. Topic names are
ASCII (``[a-zA-Z0-9._-]``), so a class is only ever asked about its ASCII members, and
greediness never decides whether a whole name matches. RE2/J runs an automaton, in time
linear in the name; Python's ``re`` backtracks, so the patterns it could take
exponential time on are refused too (:func:`_refuse_backtracking`), a stated difference.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

__all__ = ["InvalidRegex", "compile_re2j", "regex_error_message"]


class InvalidRegex(ValueError):
    """RE2/J's ``PatternSyntaxException``: ``description`` is its ``getDescription()``."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


MAX_REPEAT = 1000
"""RE2's largest repetition count: ``a{1001}`` is a bad repetition operator."""


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
