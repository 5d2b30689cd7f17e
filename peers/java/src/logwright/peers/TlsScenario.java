package logwright.peers;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The tls step, on a broker with an SSL and a SASL_SSL listener (their addresses in the environment's
 * {@code TLS_BOOTSTRAP} and {@code SASL_SSL_BOOTSTRAP}, the CA that signed the broker's certificate in
 * {@code TLS_CA}, a client keystore in {@code TLS_CLIENT_KEYSTORE}; PLAIN user alice), with the Java client's own
 * TLS stack (JSSE) and PEM stores: a producer without a client certificate writes 100 records of 10 KB over SSL
 * and a consumer group reads them back (so the broker sends stored batches through TLS); an Admin client with a
 * client certificate is told the SSL listener's address; a producer authenticated with PLAIN over SASL_SSL writes
 * ten records and a consumer reads them back.
 */
final class TlsScenario {
    private TlsScenario() {
    }

    static void run(String topic) throws Exception {
        String tls = required("TLS_BOOTSTRAP");
        String saslTls = required("SASL_SSL_BOOTSTRAP");
        String value = "x".repeat(10_000);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(tls(tls, serializers()))) {
            for (int i = 0; i < 100; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, i + value));
            }
            producer.flush();
        }
        List<String> values = consume(tls(tls, deserializers("java-tls-" + topic)), topic, 100);
        if (values.size() != 100 || !values.get(99).equals(99 + value)) {
            fail("the SSL consumer read " + values.size() + " records");
        }
        Map<String, Object> withCertificate = new HashMap<>();
        withCertificate.put("ssl.keystore.type", "PEM");
        withCertificate.put("ssl.keystore.location", required("TLS_CLIENT_KEYSTORE"));
        try (Admin admin = Admin.create(tls(tls, withCertificate))) {
            DescribeClusterResult cluster = admin.describeCluster();
            List<String> nodes = cluster.nodes().get().stream().map(Node::host).toList();
            int port = cluster.nodes().get().iterator().next().port();
            if (!tls.endsWith(":" + port) || nodes.size() != 1) {
                fail("an SSL client was told of " + cluster.nodes().get());
            }
        }
        String plainTopic = topic + "-sasl";
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(saslTls(saslTls, serializers()))) {
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(plainTopic, 0, null, "sasl-ssl-" + i)).get();
            }
        }
        List<String> plain = consume(saslTls(saslTls, deserializers("java-sasl-tls-" + topic)), plainTopic, 10);
        if (plain.size() != 10 || !plain.get(9).equals("sasl-ssl-9")) {
            fail("the SASL_SSL consumer read " + plain);
        }
    }

    private static List<String> consume(Properties props, String topic, int count) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (values.size() < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    values.add(record.value());
                }
            }
        }
        return values;
    }

    private static Properties tls(String bootstrap, Map<String, ?> extra) {
        Properties props = new Properties();
        props.putAll(extra);
        props.put("bootstrap.servers", bootstrap);
        props.put("security.protocol", "SSL");
        props.put("ssl.truststore.type", "PEM");
        props.put("ssl.truststore.location", required("TLS_CA"));
        return props;
    }

    private static Properties saslTls(String bootstrap, Map<String, ?> extra) {
        Properties props = tls(bootstrap, extra);
        props.put("security.protocol", "SASL_SSL");
        props.put("sasl.mechanism", "PLAIN");
        props.put("sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" "
                + "password=\"alice-secret\";");
        return props;
    }

    private static Map<String, Object> serializers() {
        Map<String, Object> props = new HashMap<>();
        props.put("acks", "all");
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        return props;
    }

    private static Map<String, Object> deserializers(String group) {
        Map<String, Object> props = new HashMap<>();
        props.put("group.id", group);
        props.put("auto.offset.reset", "earliest");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        return props;
    }

    private static String required(String name) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            fail(name + " is not set: the broker has no TLS listener");
        }
        return value;
    }

    private static void fail(String message) {
        System.out.println("FAIL " + message);
        System.exit(1);
    }
}
