"""Pop consumption (RocketMQ 5's Pop): the in-flight projection, receipt handles and the pop decisions."""
