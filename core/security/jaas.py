"""The one JAAS login-module line a Kafka listener key holds (``listener.name.L.M.sasl.jaas.config``), read so a
broker configured for Kafka is configured for logwright with the same line.

Written by hand: it reads one ``Module flag name="value" ...;`` entry (options as ``name="value"`` or bare
``name=value``), not Java's whole JAAS grammar, for which no Python library exists.
"""

from __future__ import annotations

import re

from logwright.core.errors import InvalidConfig

_OPTION = re.compile(r'\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')
_HEADER = re.compile(r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)")


def login_module_options(jaas: str, module: str) -> dict[str, str]:
    """The options of ``jaas``, one entry of login module ``module`` ending in ``;`` ("" has none). Raises
    `InvalidConfig` for anything else."""
    text = jaas.strip()
    if not text:
        return {}
    header = _HEADER.match(text)
    if header is None or header.group(1) != module:
        raise InvalidConfig(f"the JAAS configuration must name {module} with a control flag")
    position, options = header.end(), {}
    while True:
        option = _OPTION.match(text, position)
        if option is None:
            break
        quoted = option.group(2)
        options[option.group(1)] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else option.group(3)
        position = option.end()
    if text[position:].strip() != ";":
        raise InvalidConfig("the JAAS configuration must end its login module with ';'")
    return options
