"""The bundled asyncio client, with an API that reads like Pulsar's: ``from logwright.client import Client``.

See `logwright.client.client` for the semantics and docs/client.md for the guide.
"""

from logwright.client.client import (
    AckReceipt,
    BrokerError,
    Client,
    ClientError,
    ConnectionClosed,
    Consumer,
    ConsumerBusy,
    FixedDelay,
    InvalidConfiguration,
    Message,
    MessageId,
    MultiplierBackoff,
    PublishTime,
    Reader,
    Timeout,
)

__all__ = [
    "AckReceipt",
    "BrokerError",
    "Client",
    "ClientError",
    "ConnectionClosed",
    "Consumer",
    "ConsumerBusy",
    "FixedDelay",
    "InvalidConfiguration",
    "Message",
    "MessageId",
    "MultiplierBackoff",
    "PublishTime",
    "Reader",
    "Timeout",
]
