"""Suite-wide settings.

Hypothesis's per-example deadline (200 ms) is a wall-clock assertion: on the shared two-core machine an
example that is fast alone takes seconds while other suites run, and the run fails as "flaky" for no
fault of the code. The examples still run; only their timing is no longer judged.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("logwright", deadline=None)
settings.load_profile("logwright")
