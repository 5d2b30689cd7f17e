"""Real clients' request frames, recorded by a TCP proxy between them and the broker, to seed the fuzzer.

kio-built seeds cover every (API key, version) grammar; these add what real clients put in the fields: librdkafka's
compressed batches, idempotent producer state, group joins and commits, kafka-python's and aiokafka's header and
version choices. The broker must advertise the proxy's address (``--advertised``) so that the clients stay on it
after their first Metadata answer.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic


class RecordingProxy:
    """Forwards one port to another and keeps every client-to-broker frame (without its size prefix)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.frames: list[bytes] = []
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", self.port))
        self._ready.set()
        self._loop.run_forever()
        server.close()
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.close()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        broker_reader, broker_writer = await asyncio.open_connection("127.0.0.1", self.target_port)

        async def requests() -> None:
            while True:
                prefix = await client_reader.readexactly(4)
                payload = await client_reader.readexactly(struct.unpack(">i", prefix)[0])
                self.frames.append(payload)
                broker_writer.write(prefix + payload)

        async def answers() -> None:
            while data := await broker_reader.read(65536):
                client_writer.write(data)

        try:
            await asyncio.gather(requests(), answers())
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            client_writer.close()
            broker_writer.close()

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def run_clients(bootstrap: str) -> None:
    """A short session of each client: admin, idempotent compressed produce, group consume and commit."""
    topic = f"capture-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2)])[topic].result(20)
    for codec in ("lz4", "zstd"):
        producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "compression.type": codec,
                             "linger.ms": 5})
        for number in range(20):
            producer.produce(topic, key=str(number).encode(), value=b"value %d" % number, headers={"h": b"1"})
        assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    try:
        for _ in range(100):
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                consumer.commit(message, asynchronous=False)
                break
    finally:
        consumer.close()
    _kafka_python(bootstrap, topic)


def _kafka_python(bootstrap: str, topic: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type="gzip")
    producer.send(topic, b"from kafka-python").get(timeout=20)
    producer.close()
