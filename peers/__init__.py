"""The peer test suites: other projects' own tests (kafka-python, franz-go) and the Java client scenario.

A regular package, so ``peers`` names this folder even when ``bench/`` (which has a ``peers.py``) is on the path.
"""
