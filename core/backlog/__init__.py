"""Backlog quotas (Pulsar's, seed 001): exact per-subscription backlog, quota verdicts, audited evictions."""
