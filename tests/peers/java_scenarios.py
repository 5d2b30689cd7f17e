"""What the Java scenario tests share: a JDK, the compiled scenarios' classpath and the java binary.

peers/java_client.py compiles peers/java/src with javac against kafka-clients from Maven Central; importing it
also puts bench/ (kafka_peer, which finds java) on sys.path.
"""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def java_and_classpath() -> tuple[str, str]:
    """``(java binary, classpath of the compiled scenarios)``; the test fails when no JDK is installed."""
    if shutil.which("javac") is None:
        pytest.fail("javac is missing: install a JDK 17+ (default-jdk-headless)")
    sys.path.insert(0, str(ROOT))
    java_client = importlib.import_module("peers.java_client")
    java = importlib.import_module("kafka_peer").java
    return java(), java_client.build()
