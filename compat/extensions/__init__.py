"""logwright's own API keys (32001 and up): what Kafka's request format cannot say. One module per key."""
