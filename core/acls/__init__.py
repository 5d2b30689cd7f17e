"""ACL bindings as Kafka's StandardAuthorizer answers them, and its decisions over them (`authorizer`)."""
