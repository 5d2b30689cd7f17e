"""The peer test suites: other projects' own tests (kafka-python, franz-go) and the Java client scenario.

A regular package, so that ``peers`` names this folder wherever the repository root is on the path; the
benchmarks' broker launcher is ``bench/brokers.py`` (peers/suite.py imports it as ``bench.brokers``).
"""
