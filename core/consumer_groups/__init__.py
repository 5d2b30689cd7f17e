"""KIP-848 consumer groups: heartbeats, server-side assignors, incremental reconciliation."""
