"""Compacted topics: Kafka's log cleaner decisions (what is cleanable, which records stay), pure."""
