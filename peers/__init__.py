"""The peer test suites: other projects' own tests (kafka-python, franz-go) and the Java client scenario.

A regular package, so that ``peers`` names this folder when the repository root comes first on the path,
even with ``bench/`` (which has a ``peers.py``) further down; peers/suite.py imports that one as ``bench.peers``.
"""
