"""The stateful services behind the group and transaction APIs: classic groups, KIP-848 consumer groups,
share groups, transactions, and the deadline timer they share (deadlines on the broker clock, nothing polls)."""
