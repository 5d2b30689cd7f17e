"""Config definitions (topic, group, broker) and how overrides change them."""
