"""``ssl.principal.mapping.rules`` read and applied as Kafka's SslPrincipalMapper does (KIP-371's examples and
Kafka's own rule syntax): the first rule whose pattern matches the whole subject names the principal."""

from __future__ import annotations

import pytest
from logwright.core.errors import InvalidConfig
from logwright.core.security.ssl_principal_rules import PrincipalRules

SUBJECT = "CN=Alice,OU=tests,O=logwright,C=NO"


@pytest.mark.parametrize(("rules", "named"), [
    ("DEFAULT", SUBJECT),
    ("", SUBJECT),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?),C=(.*?)$/$1@$2/L", "alice@tests"),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?),C=(.*?)$/$1@$2/U", "ALICE@TESTS"),
    ("RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/", "Alice"),
    ("RULE:^CN=([^,]*),OU=other.*$/$1/, DEFAULT", SUBJECT),  # the first rule does not match: the next names it
    ("RULE:^CN=([^,]*),OU=other.*$/$1/,RULE:^CN=([^,]*),.*$/user-$1/", "user-Alice"),
    ("RULE:^CN=([^,]*),.*$/a\\/b\\$1/", "a/b$1"),  # escaped slash and dollar: literals
    ("RULE:^CN=([^,]*),.*$/$12$9/", "Alice2$9"),  # $12 is group 1 then "2"; $9 (no such group) is literal
    ("RULE:^CN=([^,]*),.*$/$0/", SUBJECT),
    (",,RULE:^CN=([^,]*),.*$/$1/,,", "Alice"),  # empty rules are skipped
])
def test_the_first_matching_rule_names_the_principal(rules: str, named: str) -> None:
    assert PrincipalRules.parse(rules).name(SUBJECT) == named


def test_a_subject_no_rule_matches_has_no_principal() -> None:
    rules = PrincipalRules.parse("RULE:^CN=([^,]*),OU=other.*$/$1/")
    assert rules.name(SUBJECT) is None
    assert not rules.is_default and PrincipalRules.parse("DEFAULT").is_default


def test_every_match_is_replaced_as_javas_replace_all() -> None:
    """The pattern must match the whole subject, then each match in it is replaced: ``.*`` also matches the empty
    text at the end, as in Java."""
    assert PrincipalRules.parse("RULE:.*/x/").name("abc") == "xx"


def test_text_after_the_last_slash_but_the_case_letter_is_ignored_as_kafka_reads_it() -> None:
    assert PrincipalRules.parse("RULE:^CN=([^,]*),.*$/$1/Lxyz, DEFAULT").name(SUBJECT) == "alice"
    assert PrincipalRules.parse("RULE:^CN=([^,]*),.*$/$1/Q").name(SUBJECT) == "Alice"


@pytest.mark.parametrize("rules", ["foo", "RULE:a/b", "RULE:(/x/", "DEFAULT,bar"])
def test_text_that_is_not_rules_is_refused(rules: str) -> None:
    with pytest.raises(InvalidConfig, match="ssl.principal.mapping.rules"):
        PrincipalRules.parse(rules)
