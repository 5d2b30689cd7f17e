"""The broker process the integration tests start: one copy, shipped in `logwright.testing.broker_process`."""

from logwright.testing.broker_process import BrokerProcess, free_port

__all__ = ["BrokerProcess", "free_port"]
