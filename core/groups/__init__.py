"""Classic consumer groups (JoinGroup/SyncGroup): membership, sessions, rebalances, committed offsets."""
