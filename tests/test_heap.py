"""The broker process's malloc thresholds (`logwright.heap`): freed answers' memory is reused, not faulted in again.

Each case runs in a child interpreter: the thresholds are the whole process's, and the page faults counted are."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

ANSWERS = textwrap.dedent("""
    import resource, sys
    from logwright.heap import keep_freed_memory
    if sys.argv[1] == "kept":
        assert keep_freed_memory(), "glibc refused the thresholds"
    def answer():  # what a Fetch answer read into memory holds until it is sent: 40 MB in 160 buffers
        held = [bytearray(256 * 1024) for _ in range(160)]
        del held
    answer()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        answer()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")


def _faults_of_five_answers(mode: str) -> int:
    """glibc's own settings left out of the child's environment, so "default" is glibc's defaults."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("MALLOC_") and key != "GLIBC_TUNABLES"}
    done = subprocess.run([sys.executable, "-c", ANSWERS, mode], capture_output=True, text=True, check=True, env=env)
    return int(done.stdout)


def test_kept_thresholds_let_the_next_answer_reuse_the_pages_the_last_one_freed() -> None:
    pages = 5 * 40 * 1024 * 1024 // 4096
    assert _faults_of_five_answers("default") > pages // 2, "glibc's defaults fault every answer's memory in again"
    assert _faults_of_five_answers("kept") < pages // 50, "kept, the five answers after the first fault in ~nothing"
