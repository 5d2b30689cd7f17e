"""The principal a client certificate names (`compat.tls.subject_principal`), checked against what Java 17's
``X500Principal.getName()`` writes for the same subjects (the strings below are its output)."""

from __future__ import annotations

from logwright.compat.tls import client_principal, subject_principal
from logwright.core.security.ssl_principal_rules import PrincipalRules


def test_the_subject_is_written_last_rdn_first() -> None:
    subject = ((("countryName", "NO"),), (("organizationName", "logwright"),),
               (("organizationalUnitName", "tests"),), (("commonName", "alice"),))
    assert subject_principal(subject) == "CN=alice,OU=tests,O=logwright,C=NO"


def test_special_characters_multi_valued_rdns_and_attributes_without_a_keyword() -> None:
    subject = ((("stateOrProvinceName", "trail"),), (("localityName", "lead"),),
               (("organizationName", "#hash=eq"),), (("organizationalUnitName", "x"), ("userId", "y")),
               (("commonName", "a,b"),), (("emailAddress", "alice@example.com"),))
    assert subject_principal(subject) == (
        "1.2.840.113549.1.9.1=#1611616c696365406578616d706c652e636f6d,CN=a\\,b,OU=x+UID=y,O=\\#hash\\=eq,L=lead,"
        "ST=trail")
    subject = ((("title", "boss"),), (("streetAddress", "Main 1"),), (("domainComponent", "com"),),
               (("domainComponent", "example"),), (("serialNumber", "1234"),), (("commonName", "semi;colon<gt>"),))
    assert subject_principal(subject) == (
        "CN=semi\\;colon\\<gt\\>,2.5.4.5=#130431323334,DC=example,DC=com,STREET=Main 1,2.5.4.12=#0c04626f7373"), (
        "Java wrote the title #1304626f7373 from a string (a PrintableString); a certificate's is taken as UTF8")


def test_a_client_without_a_certificate_is_anonymous() -> None:
    class NoCertificate:
        def getpeercert(self) -> dict[str, object] | None:
            return None

    rules = PrincipalRules.parse("RULE:^CN=(.*)$/$1/")  # no subject to map: ANONYMOUS whatever the rules
    assert client_principal(NoCertificate(), rules) == "ANONYMOUS"
    assert client_principal(None, rules) == "ANONYMOUS"
