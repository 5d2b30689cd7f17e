"""KIP-98 transactions: the coordinator's state and each partition's index of open and aborted transactions."""
