package logwright.peers;

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The quotas step: the Admin client sets a {@code producer_byte_rate} of 100,000 B/s on a client id of its own
 * ({@code alterClientQuotas}), reads it back ({@code describeClientQuotas}), then a producer with that client id
 * sends 1.5 MB: Kafka's rate counts ten seconds, so the first megabyte passes and the rest is throttled. The
 * producer must see the broker's throttle ({@code produce-throttle-time-max} above 0) and every record must be
 * acknowledged; the quota is then removed and must be gone.
 */
final class ClientQuotaScenario {
    private static final double RATE = 100_000;

    private ClientQuotaScenario() {
    }

    static void run(String bootstrap, String topic) throws Exception {
        String clientId = "java-quota-" + UUID.randomUUID().toString().substring(0, 8);
        ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, clientId));
        ClientQuotaFilter filter = ClientQuotaFilter.containsOnly(
                List.of(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, clientId)));
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(common)) {
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity,
                    List.of(new ClientQuotaAlteration.Op("producer_byte_rate", RATE))))).all().get();
            Map<ClientQuotaEntity, Map<String, Double>> described = Map.of();
            for (int attempt = 0; attempt < 100 && described.isEmpty(); attempt++) {
                described = admin.describeClientQuotas(filter).entities().get();
                Thread.sleep(described.isEmpty() ? 100 : 0);  // Kafka's broker sees its controller's change later
            }
            if (!Map.of(entity, Map.of("producer_byte_rate", RATE)).equals(described)) {
                fail("described " + described);
            }
            Properties props = new Properties();
            props.putAll(common);
            props.put("client.id", clientId);
            props.put("acks", "all");
            props.put("linger.ms", "5");
            props.put("key.serializer", ByteArraySerializer.class.getName());
            props.put("value.serializer", ByteArraySerializer.class.getName());
            double throttled;
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
                byte[] value = new byte[10_000];
                for (int i = 0; i < 150; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, null, value));
                }
                producer.flush();
                throttled = metric(producer.metrics(), "produce-throttle-time-max");
            }
            if (!(throttled > 0)) {
                fail("the producer saw no throttle (produce-throttle-time-max " + throttled + ")");
            }
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity,
                    List.of(new ClientQuotaAlteration.Op("producer_byte_rate", null))))).all().get();
            for (int attempt = 0; attempt < 100 && !described.isEmpty(); attempt++) {
                described = admin.describeClientQuotas(filter).entities().get();
                Thread.sleep(described.isEmpty() ? 0 : 100);
            }
            if (!described.isEmpty()) {
                fail("still described after removal: " + described);
            }
        }
    }

    private static double metric(Map<MetricName, ? extends Metric> metrics, String name) {
        for (var entry : metrics.entrySet()) {
            if (entry.getKey().name().equals(name) && entry.getKey().group().equals("producer-metrics")) {
                return ((Number) entry.getValue().metricValue()).doubleValue();
            }
        }
        return Double.NaN;
    }

    private static void fail(String message) {
        System.out.println("FAIL " + message);
        System.exit(1);
    }
}
