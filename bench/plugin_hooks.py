"""What the decision and wrapper hooks cost per call, resolved once (`PluginHost.release_decider`,
`PluginHost.admission`) against calling through pluggy's hook caller each time.

Per call, best of five runs of 100,000 calls each, in microseconds:

- ``logwright_decide_release`` with the example plugin's plain implementation before the built-in
  default: the resolved loop over plain functions, and the pluggy hook call;
- ``logwright_admit_append`` with the example plugin's wrapper: the resolved callable (which keeps
  pluggy's caller, as wrappers need it) and a direct pluggy call;
- with only the built-in defaults both resolve to ``None``: the broker makes no call at all.

Measured (2-core machine, two runs): the resolved decision 0.72-0.95 us against 2.20-2.44 us through
pluggy; the admission wrapper 2.46-2.52 us resolved, 2.38-2.39 us through pluggy (the same caller), once
per produce request.

    PYTHONPATH=examples/plugin-example python bench/plugin_hooks.py
"""

from __future__ import annotations

import timeit
from collections.abc import Callable
from typing import Any

from logwright.core.cursors.plugin_decisions import AppendRequest, PartitionAppend, ReleasedDelivery, ReleaseReason
from logwright.plugins.host import PluginHost

CALLS = 100_000


def per_call_us(call: Callable[[], Any]) -> float:
    return min(timeit.repeat(call, number=CALLS, repeat=5)) / CALLS * 1e6


def main() -> None:
    import logwright_example_plugin  # type: ignore[import-not-found]

    host = PluginHost.load(installed=False, extra=[("first_come", logwright_example_plugin)])
    builtins = PluginHost.load(installed=False)
    delivery = ReleasedDelivery("sub", "t", 0, ((0, 9),), 2, ReleaseReason.RELEASED, "c", 0, 0,
                                {"logwright.example.backoff.ms": "100", "share.delivery.count.limit": "5"})
    request = AppendRequest((PartitionAppend("t", 0, 7, 10, 1000, topic_configs={}),), "client", 0)
    decide, admit = host.release_decider(), host.admission()
    assert decide is not None and admit is not None
    hooks = host._manager.hook
    rows = [
        ("decide_release, resolved (plain implementations)", per_call_us(lambda: decide(delivery))),
        ("decide_release, through pluggy each call", per_call_us(
            lambda: hooks.logwright_decide_release(delivery=delivery))),
        ("admit_append, resolved (a wrapper: pluggy's caller kept)", per_call_us(lambda: admit(request))),
        ("admit_append, through pluggy each call", per_call_us(lambda: hooks.logwright_admit_append(request=request))),
    ]
    for name, micros in rows:
        print(f"{name:58s} {micros:6.2f} us")
    print(f"{'built-in defaults only':58s} decider={builtins.release_decider()} admission={builtins.admission()}"
          " (no call)")


if __name__ == "__main__":
    main()
