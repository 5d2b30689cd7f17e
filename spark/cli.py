"""The body of `logwright replay`, kept here so `logwright.cli` imports nothing of Spark."""

from __future__ import annotations

import logging
import time

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .replay import replay
from .session import spark_session


def run_replay(data_dir: str, master: str, events_per_task: int) -> int:
    """Replay with a progress bar of Spark tasks; 0 when consistent, 1 on a difference."""
    logging.getLogger("py4j").setLevel(logging.WARNING)
    from pyspark.sql import SparkSession

    started = time.monotonic()
    owned = SparkSession.getActiveSession() is None  # in-process callers (tests) keep their session
    spark = spark_session(master, "logwright replay", **{"spark.ui.showConsoleProgress": "false"})  # ours instead
    spark.sparkContext.setLogLevel("ERROR")
    try:
        with Progress(TextColumn("replay"), BarColumn(), MofNCompleteColumn(), TextColumn("tasks"),
                      TimeElapsedColumn(), transient=True) as progress:
            bar = progress.add_task("replay", total=None)

            def on_progress(done: int, total: int) -> None:
                progress.update(bar, completed=done, total=total or None)

            report = replay(spark, data_dir, events_per_task=events_per_task, on_progress=on_progress)
    finally:
        if owned:
            spark.stop()
    for difference in report.differences:
        click.echo(difference, err=True)
    elapsed = time.monotonic() - started
    click.echo(f"{report.summary()} (spark {master}, {elapsed:.1f} s)")
    return 0 if report.consistent else 1
