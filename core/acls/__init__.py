"""ACL bindings as Kafka's StandardAuthorizer answers them (stored, not enforced)."""
