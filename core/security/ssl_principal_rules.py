"""Kafka's ``ssl.principal.mapping.rules``: from a client certificate's subject to the name in its ``User:``
principal, so ACLs can name ``User:alice`` rather than a whole distinguished name.

The rules are Kafka's (KIP-371): a comma-separated list of ``DEFAULT`` (the subject as it is) and
``RULE:pattern/replacement/`` with an optional ``L`` or ``U`` after the last slash (lower or upper case the
result); a ``/`` or ``\\`` inside the pattern or the replacement is escaped with ``\\``. The first rule whose pattern
matches the whole subject names the principal: every match of the pattern in the subject is replaced (Java's
``replaceAll``), ``$n`` in the replacement standing for group n (a ``$n`` past the pattern's groups is read as Java
reads it: fewer digits, else the literal text). A subject no rule matches has no principal: as on Kafka, the
connection is closed. Patterns are Python's ``re``, which reads the patterns such rules use as Java does (classes,
groups, quantifiers, anchors); they are the operator's, matched against certificates a trusted CA signed. Written
here because nothing in Python reads these rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from logwright.core.errors import InvalidConfig

_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)[^,]*?)?\s*(?:,|$)")
"""One rule and the comma after it; an empty one (``,,``) is skipped, and text after a rule's last slash but its
case letter is ignored, as Kafka's rule syntax reads them."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule; ``pattern`` ``None`` is DEFAULT."""

    pattern: re.Pattern[str] | None
    replacement: tuple[str | int, ...] = ()
    """Literal text and group numbers, in order."""
    case: str = ""

    def apply(self, subject: str) -> str | None:
        if self.pattern is None:
            return subject
        if self.pattern.fullmatch(subject) is None:
            return None
        result = self.pattern.sub(self._replace, subject)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else result

    def _replace(self, match: re.Match[str]) -> str:
        return "".join(part if isinstance(part, str) else (match.group(part) or "") for part in self.replacement)


@dataclass(frozen=True, slots=True)
class PrincipalRules:
    rules: tuple[Rule, ...]

    @classmethod
    def parse(cls, text: str) -> PrincipalRules:
        """Raises `InvalidConfig` for text that is not a list of rules, or a pattern that does not compile."""
        rules: list[Rule] = []
        position, text = 0, text.strip()
        while position < len(text):
            found = _RULE.match(text, position)
            if found is None or found.end() == position:
                raise InvalidConfig(f"ssl.principal.mapping.rules: invalid rule at {text[position:]!r}")
            position = found.end()
            if found.group(1):
                rules.append(Rule(None))
                continue
            if found.group(2) is None:
                continue
            try:
                pattern = re.compile(found.group(2))  # a ``\/`` in it is a ``/`` to Python's re as to Java's
            except re.error as error:
                raise InvalidConfig(f"ssl.principal.mapping.rules: the pattern {found.group(2)!r} does not "
                                    f"compile: {error}") from None
            rules.append(Rule(pattern, _replacement(found.group(3), pattern.groups), found.group(4)))
        return cls(tuple(rules) or (Rule(None),))

    @property
    def is_default(self) -> bool:
        return all(rule.pattern is None for rule in self.rules)

    def name(self, subject: str) -> str | None:
        """The principal's name for ``subject`` (RFC 2253, as Java writes it); ``None`` when no rule applies."""
        for rule in self.rules:
            named = rule.apply(subject)
            if named is not None:
                return named
        return None


def _replacement(text: str, groups: int) -> tuple[str | int, ...]:
    """Java's replacement syntax: ``\\c`` is ``c``; ``$n`` a group, its digits read while they name one."""
    parts: list[str | int] = []
    literal: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            literal.append(text[index + 1])
            index += 2
            continue
        if char == "$" and index + 1 < len(text) and text[index + 1].isdigit() and int(text[index + 1]) <= groups:
            number, index = int(text[index + 1]), index + 2
            while index < len(text) and text[index].isdigit() and number * 10 + int(text[index]) <= groups:
                number, index = number * 10 + int(text[index]), index + 1
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(number)
            continue
        literal.append(char)
        index += 1
    if literal:
        parts.append("".join(literal))
    return tuple(parts)
