"""Features built on record keys decoded at append (`core.log.record_keys`): business-key deduplication and
consumers' processed keys."""
