"""Authentication: SCRAM credentials as events (KIP-554), and the SASL mechanisms a SASL_PLAINTEXT listener
speaks (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER) as sans-I/O exchanges."""
