"""Kafka's API keys, one module per key, named as Kafka names the API (`compat.handlers` lists them by key).

A few modules here are shared by several handlers and serve no key themselves: `config_resources`,
`share_wire` and `share_offsets`."""
