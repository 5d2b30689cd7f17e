"""Client quotas: Kafka's quota entities and keys (KIP-546), their validation, what DescribeClientQuotas matches,
which quota applies to a client, and Kafka's sampled byte rate with the throttle time it asks for."""
