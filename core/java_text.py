"""Text as Java writes it in UTF-8, for a string that holds half a UTF-16 surrogate pair.

A JSON ``\\udc7a``-style escape (an OAUTHBEARER token's ``sub``, read as Jackson and jose4j read it) leaves a lone
surrogate in a Java string, and Python's JSON reader leaves the same one in a ``str``. Kafka keeps such a principal
as it is for the session (its ACLs and token ownership compare the string itself), but Java's
``String.getBytes(UTF_8)`` writes each lone half as ``?`` wherever the name goes out: in an error message, in a
delegation token's owner. Python's encoder refuses it instead: such a principal's answers failed to encode (found
by the hostile-SASL fuzz, seed 283), and a token's event naming it would not have been stored.
"""

from __future__ import annotations


def java_utf8(text: str) -> str:
    """``text`` as Java's UTF-8 encoder writes it: each unpaired surrogate as ``?`` (Python's JSON reader joins the
    halves of a pair into one character, so only unpaired ones are left)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode(errors="replace").decode()
    return text
