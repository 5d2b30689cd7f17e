"""The innermost admission of an append: admit everything.

Quota and dedup plugins wrap this hook (``@hookimpl(wrapper=True)``) and refuse partitions on top of
its answer; having a default here means a wrapper always receives an `Admission` to refine.
"""

from __future__ import annotations

from .api import ADMIT_ALL, Admission, AppendRequest, hookimpl


@hookimpl(trylast=True)
def logwright_admit_append(request: AppendRequest) -> Admission:
    return ADMIT_ALL
