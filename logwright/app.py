"""Wiring: open the store, build the broker and its server, run until asked to stop, flush on the way out."""

from __future__ import annotations

import asyncio
import logging
import signal

from logwright.compat.broker import BrokerSettings
from logwright.compat.extensions import clock_control
from logwright.compat.server import KafkaServer
from logwright.compat.wiring import compose_broker
from logwright.core.clock import MANUAL_CLOCK, MANUAL_CLOCK_KEY, Clock, ManualClock, ManualClockState
from logwright.core.events import ManualClockSet
from logwright.eventstore.clock import SystemClock
from logwright.eventstore.interface import Durability
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.garbage_collector import tune_garbage_collector
from logwright.heap import keep_freed_memory
from logwright.plugins.host import PluginHost

log = logging.getLogger(__name__)


def parse_address(address: str) -> tuple[str, int]:
    host, separator, port = address.rpartition(":")
    if not separator or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {address!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def resume_manual_clock(store: RocksEventStore) -> ManualClock:
    """The time the manual clock was last set to in this data directory, or the wall clock on a new one.

    A new clock's start is written too, so a broker restarted before any advance resumes where it
    began; record timestamps look ordinary and only the extension API moves time after that.
    """
    state = store.state(MANUAL_CLOCK.name, MANUAL_CLOCK_KEY)
    if isinstance(state, ManualClockState):
        return ManualClock(state.now_ms)
    clock = ManualClock(SystemClock().now_ms())
    store.append([ManualClockSet(clock.now_ms())])
    store.commit()
    return clock


async def run_broker(
    data_dir: str, settings: BrokerSettings, durability: Durability, ready_file: str | None = None,
    manual_clock: bool = False,
) -> None:
    host = PluginHost.for_broker(settings.overrides)  # plugins.extra added, plugins.disabled left out
    configs = host.config_registry()
    for name in configs.check_static("broker", settings.overrides):  # a bad value refuses the start, as Kafka's
        log.warning("the configuration %r was supplied but isn't a known config: logwright ignores it", name)
    store = RocksEventStore(data_dir, durability=durability, projections=host.projections(),
                            types=host.type_registry())
    clock: Clock | None = resume_manual_clock(store) if manual_clock else None
    broker = compose_broker(store, host, settings, configs=configs, clock=clock)
    server = KafkaServer(broker)
    host.install_extension_handlers()  # keys outside Kafka's range: their handlers read and write raw bodies
    tune_garbage_collector()
    keep_freed_memory()
    if manual_clock:
        clock_control.enable()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signal_number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signal_number, stop.set)
    tasks: list[asyncio.Task[None]] = []
    try:
        await server.start()
        broker.coordinators.start()  # deadlines restored from the store fire without waiting for a client
        tasks = host.start_background_tasks(broker)
        log.info("logwright is serving %s with %d events (durability %s, %d plugin tasks)", data_dir,
                 store.last_sequence, durability.value, len(tasks))
        if ready_file:
            with open(ready_file, "w") as handle:
                handle.write(f"{settings.host}:{settings.port}\n")
        await stop.wait()
        log.info("shutting down")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.stop()
        await broker.finish_started_work()  # a transaction's end under way is committed whole, not cut
        broker.coordinators.close()
        broker.commit_now()
        store.close()
