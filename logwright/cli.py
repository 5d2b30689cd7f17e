"""The `logwright` command line: serve, events, check (more subcommands arrive with their issues)."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

import click

from logwright.compat.backlog_check import BacklogCheck
from logwright.compat.broker import BrokerSettings
from logwright.compat.idle_poll import DEFAULT_IDLE_POLL_US, IdlePollSelector
from logwright.compat.loop_stalls import LoopStalls
from logwright.core.errors import InvalidConfig
from logwright.eventstore.check import check_store
from logwright.eventstore.codec import event_to_json
from logwright.eventstore.interface import Durability
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.plugins.host import DISABLED_KEY, EXTRA_KEY, PluginHost, config_list

from .app import parse_address, run_broker

DATA_DIR = click.option(
    "--data-dir", default="./data", show_default=True, type=click.Path(file_okay=False), help="RocksDB directory"
)
DISABLE_PLUGIN = click.option(
    "--disable-plugin", "disabled", multiple=True, metavar="NAME",
    help=f"do not load this plugin (built-in or installed; repeatable; added to the {DISABLED_KEY} config)")
EXTRA_PLUGIN = click.option(
    "--plugin", "extra", multiple=True, metavar="MODULE",
    help=f"register this module as a plugin beside the installed ones (repeatable; added to {EXTRA_KEY})")


def with_plugin_options(overrides: dict[str, str], disabled: tuple[str, ...], extra: tuple[str, ...]) -> None:
    """Add ``--disable-plugin`` and ``--plugin`` to the ``plugins.disabled`` and ``plugins.extra`` overrides."""
    for key, names in ((DISABLED_KEY, disabled), (EXTRA_KEY, extra)):
        merged = dict.fromkeys((*config_list(overrides.get(key, "")), *names))
        if merged:
            overrides[key] = ",".join(merged)


@click.group()
@click.option("--log-level", default="INFO", show_default=True)
def main(log_level: str) -> None:
    """logwright: a Kafka-compatible, event-sourced message broker on RocksDB."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@main.command()
@DATA_DIR
@click.option("--listen", default="127.0.0.1:9092", show_default=True, help="HOST:PORT to listen on")
@click.option("--advertised", default=None, help="HOST:PORT given to clients (defaults to --listen)")
@click.option("--sasl-listen", default=None,
              help="HOST:PORT of a SASL_PLAINTEXT listener (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) besides --listen")
@click.option("--sasl-advertised", default=None, help="HOST:PORT given to its clients (defaults to --sasl-listen)")
@click.option("--ssl-listen", default=None,
              help="HOST:PORT of an SSL listener (TLS; the ssl.* configs name its PEM stores) besides --listen")
@click.option("--ssl-advertised", default=None, help="HOST:PORT given to its clients (defaults to --ssl-listen)")
@click.option("--sasl-ssl-listen", default=None, help="HOST:PORT of a SASL_SSL listener (SASL over TLS)")
@click.option("--sasl-ssl-advertised", default=None,
              help="HOST:PORT given to its clients (defaults to --sasl-ssl-listen)")
@click.option("--durability", type=click.Choice([d.value for d in Durability]), default="wal", show_default=True)
@click.option("--config", "overrides", multiple=True, metavar="KEY=VALUE", help="broker config override")
@click.option("--ready-file", default=None, hidden=True, help="write HOST:PORT here once listening (tests)")
@click.option("--manual-clock", is_flag=True, hidden=True,
              help="run on a clock that only the LogwrightAdvanceClock extension API moves (tests)")
@click.option("--idle-poll-us", default=DEFAULT_IDLE_POLL_US, show_default=True, type=click.IntRange(0, 10_000),
              help="poll the sockets this long before the event loop sleeps, adaptively (0: never)")
@click.option("--log-stalls-ms", default=0, show_default=True, type=click.IntRange(0, 60_000),
              help="log every event-loop step that runs this long or longer, with where it was (0: never)")
@DISABLE_PLUGIN
@EXTRA_PLUGIN
def serve(data_dir: str, listen: str, advertised: str | None, sasl_listen: str | None, sasl_advertised: str | None,
          ssl_listen: str | None, ssl_advertised: str | None, sasl_ssl_listen: str | None,
          sasl_ssl_advertised: str | None, durability: str, overrides: tuple[str, ...],
          ready_file: str | None, manual_clock: bool, idle_poll_us: int, log_stalls_ms: int,
          disabled: tuple[str, ...], extra: tuple[str, ...]) -> None:
    """Run the broker on DATA_DIR, serving the Kafka protocol on --listen."""
    host, port = parse_address(listen)
    settings = BrokerSettings(host=host, port=port)
    if advertised:
        settings.advertised_host, settings.advertised_port = parse_address(advertised)
    for prefix, address, advertised_address in (("sasl", sasl_listen, sasl_advertised),
                                                ("ssl", ssl_listen, ssl_advertised),
                                                ("sasl_ssl", sasl_ssl_listen, sasl_ssl_advertised)):
        if address:  # BrokerSettings' <prefix>_host and the rest
            listen_host, listen_port = parse_address(address)
            setattr(settings, f"{prefix}_host", listen_host)
            setattr(settings, f"{prefix}_port", listen_port)
        if advertised_address:
            advertised_host, advertised_port = parse_address(advertised_address)
            setattr(settings, f"{prefix}_advertised_host", advertised_host)
            setattr(settings, f"{prefix}_advertised_port", advertised_port)
    for override in overrides:
        key, separator, value = override.partition("=")
        if not separator:
            raise click.BadParameter(f"expected KEY=VALUE, got {override!r}", param_hint="--config")
        settings.overrides[key] = value
    with_plugin_options(settings.overrides, disabled, extra)
    stalls = LoopStalls(log_stalls_ms / 1000) if log_stalls_ms else None
    if stalls is not None:
        stalls.install()  # from this thread, the loop's
    try:
        with asyncio.Runner(loop_factory=lambda: asyncio.SelectorEventLoop(IdlePollSelector(idle_poll_us / 1e6))
                            ) as runner:
            runner.run(run_broker(data_dir, settings, Durability(durability), ready_file, manual_clock))
    except InvalidConfig as error:
        raise click.ClickException(str(error)) from error
    finally:
        if stalls is not None:
            stalls.uninstall()


@main.command()
@DATA_DIR
@click.option("--from", "from_sequence", default=1, show_default=True, help="first sequence to print")
@click.option("--json", "as_json", is_flag=True, help="print JSON lines")
def events(data_dir: str, from_sequence: int, as_json: bool) -> None:
    """Print the event log."""
    store = _open_for_reading(data_dir)
    try:
        for logged in store.read_events(from_sequence):
            if as_json:
                line = {"sequence": logged.sequence, "time_ms": logged.time_ms, "type": type(logged.event).__name__}
                line.update(event_to_json(logged.event))
                click.echo(json.dumps(line, separators=(",", ":")))
            else:
                click.echo(f"{logged.sequence} {logged.time_ms} {logged.event!r}")
    finally:
        store.close()


@main.command()
@click.option("--bootstrap", default="127.0.0.1:9092", show_default=True, help="HOST:PORT of a running broker")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object per partition")
@click.argument("topic")
def backlog(bootstrap: str, as_json: bool, topic: str) -> None:
    """Show TOPIC's backlog quota and every subscription's exact backlog, per partition, from a running broker."""
    from logwright.client import Client

    async def inspect() -> list[dict[str, Any]]:
        client = await Client.connect(bootstrap)
        try:
            return await client.inspect("logwright.backlog.cli", topic)  # any name: the quota state is per partition
        finally:
            await client.close()

    try:
        partitions = asyncio.run(inspect())
    except Exception as error:
        raise click.ClickException(f"cannot inspect {topic!r} at {bootstrap}: {error}") from error
    for partition in partitions:
        state = partition["backlog_quota"]
        if as_json:
            click.echo(json.dumps({"partition": partition["partition"], **state}))
            continue
        quota = state["quota"]
        limits = ", ".join(f"{name}={quota[name]}" for name in ("bytes", "records", "age_ms") if quota[name] > 0)
        click.echo(f"partition {partition['partition']}  log {partition['log_start_offset']}.."
                   f"{partition['log_end_offset']}  quota: {limits or 'none'} ({quota['policy']})")
        for entry in state["subscriptions"]:
            size = "" if entry["bytes"] is None else f", {entry['bytes']} bytes, oldest {entry['age_ms']} ms"
            over = f"  OVER {entry['over']}" if entry["over"] else ""
            evicted = entry["evicted"]
            lost = f"  evicted {evicted['records']} records in {evicted['evictions']}" if evicted else ""
            if evicted and evicted.get("commits_raised_to") is not None:
                lost += f", commits raised to {evicted['commits_raised_to']}"
            slowest = "  (slowest)" if entry["subscription"] == state["slowest"] else ""
            click.echo(f"    {entry['kind']} {entry['subscription']}: {entry['records']} records{size}{over}{lost}"
                       f"{slowest}")


@main.command()
@DATA_DIR
def check(data_dir: str) -> None:
    """Rebuild every projection from the events and compare it with the stored state (and backlog quotas' batches)."""
    store = _open_for_reading(data_dir)
    try:
        report = check_store(store, checks=(BacklogCheck(),))
    finally:
        store.close()
    for difference in report.differences:
        click.echo(difference, err=True)
    click.echo(report.summary())
    sys.exit(0 if report.consistent else 1)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="print one JSON object per plugin")
@DISABLE_PLUGIN
@EXTRA_PLUGIN
def plugins(as_json: bool, disabled: tuple[str, ...], extra: tuple[str, ...]) -> None:
    """List the plugins, where each comes from and what it registers; those `serve` would not load as disabled."""
    overrides: dict[str, str] = {}
    with_plugin_options(overrides, disabled, extra)
    try:
        host = PluginHost.for_broker(overrides)
    except InvalidConfig as error:
        raise click.ClickException(str(error)) from error
    for info in host.plugins():
        registered = [f"{entry.kind}: {entry.name}" for entry in info.registrations]
        if as_json:
            click.echo(json.dumps({"name": info.name, "source": info.source.describe(), "registers": registered,
                                   "hooks": list(info.hooks), "disabled": info.disabled}))
            continue
        click.echo(f"{info.name}  [{info.source.describe()}]{'  disabled' if info.disabled else ''}")
        if info.disabled:
            continue
        for line in (*registered, f"hooks: {', '.join(info.hooks)}"):
            click.echo(f"    {line}")


@main.command()
@DATA_DIR
@click.option("--spark", "master", default="local[*]", show_default=True, help="Spark master: local[N] or a URL")
@click.option("--events-per-task", default=250_000, show_default=True, help="events each Spark task reads")
def replay(data_dir: str, master: str, events_per_task: int) -> None:
    """Recompute every projection in Spark with the core folds and diff with the stored state."""
    try:
        from logwright.spark.cli import run_replay
    except ImportError as error:
        raise click.ClickException(f"replay needs the spark extra (pip install 'logwright[spark]'): {error}") from error
    sys.exit(run_replay(data_dir, master, events_per_task))


def _open_for_reading(data_dir: str) -> RocksEventStore:
    """Open read-write (creating a new store); if a broker holds the lock, open a read-only view.

    The installed plugins' projections and event types are included, so their events decode and
    their projections are checked like the core ones.
    """
    host = PluginHost.load()
    projections, types = host.projections(), host.type_registry()
    try:
        return RocksEventStore(data_dir, projections=projections, types=types)
    except Exception as error:
        if "lock" not in str(error).lower():
            raise
        return RocksEventStore(data_dir, read_only=True, projections=projections, types=types)


if __name__ == "__main__":
    main()
