"""``python -m logwright`` and the ``logwright`` command.

kio registers hypothesis strategies for its types whenever hypothesis is importable (it is, in every
development and test environment), which took 0.2-0.8 s of each broker's start-up and more under load.
A broker never needs them, so kio is imported here with hypothesis hidden, and hypothesis is importable
again afterwards. Code that imports logwright as a library (the tests) keeps kio's strategies.
"""

from __future__ import annotations

import sys


def _import_kio_without_hypothesis() -> None:
    if "hypothesis" in sys.modules:
        return
    sys.modules["hypothesis"] = None  # type: ignore[assignment]  # import hypothesis -> ImportError
    try:
        import kio.static.primitive  # noqa: F401, PLC0415 - what imports hypothesis when it can
    finally:
        del sys.modules["hypothesis"]


def main() -> None:
    _import_kio_without_hypothesis()
    from logwright.cli import main as cli  # noqa: PLC0415 - after kio

    cli()


if __name__ == "__main__":
    main()
