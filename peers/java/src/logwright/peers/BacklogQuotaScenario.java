package logwright.peers;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java producer against logwright's backlog quotas (logwright only: Kafka has none).
 *
 * <p>Usage: {@code BacklogQuotaScenario BOOTSTRAP}. A topic with {@code logwright.backlog.quota.records=2} and
 * policy {@code producer_exception}: the third record fails at once with a {@link PolicyViolationException}
 * naming the quota. A topic with the same limit and the default {@code producer_request_hold}: the third
 * record's future stays pending while a consumer group sits at offset 0, and completes (offset 2) once the
 * group commits offset 1. Prints {@code OK backlog-quota} or {@code FAIL <why>}.
 */
public final class BacklogQuotaScenario {
    private static final String GROUP = "java-slow-group";

    private BacklogQuotaScenario() {
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String refusing = topic(bootstrap, "producer_exception");
        String holding = topic(bootstrap, "producer_request_hold");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps(bootstrap))) {
            for (String topic : List.of(refusing, holding)) {
                commit(bootstrap, topic, 0);
                for (int i = 0; i < 2; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, null, "fill")).get(30, TimeUnit.SECONDS);
                }
            }
            long started = System.nanoTime();
            try {
                producer.send(new ProducerRecord<>(refusing, 0, null, "over")).get(30, TimeUnit.SECONDS);
                fail("a record over a producer_exception quota was stored");
            } catch (ExecutionException error) {
                if (!(error.getCause() instanceof PolicyViolationException)) {
                    fail("expected PolicyViolationException, got " + error.getCause());
                }
                if (System.nanoTime() - started > TimeUnit.SECONDS.toNanos(5)) {
                    fail("the refusal took more than 5 s");
                }
            }
            Future<RecordMetadata> held = producer.send(new ProducerRecord<>(holding, 0, null, "held"));
            Thread.sleep(1000);
            if (held.isDone()) {
                fail("the record was not held: " + held.get());
            }
            commit(bootstrap, holding, 1);
            long committed = System.nanoTime();
            RecordMetadata metadata = held.get(10, TimeUnit.SECONDS);
            if (metadata.offset() != 2) {
                fail("the held record got offset " + metadata.offset());
            }
            System.out.println("released " + (System.nanoTime() - committed) / 1_000_000 + " ms after the commit");
        }
        System.out.println("OK backlog-quota");
    }

    private static void fail(String message) {
        System.out.println("FAIL " + message);
        System.exit(1);
    }

    private static String topic(String bootstrap, String policy) throws Exception {
        String topic = "java-backlog-" + UUID.randomUUID().toString().substring(0, 8);
        NewTopic created = new NewTopic(topic, 1, (short) 1).configs(Map.of(
                "logwright.backlog.quota.records", "2", "logwright.backlog.quota.policy", policy));
        try (Admin admin = Admin.create(common(bootstrap))) {
            admin.createTopics(List.of(created)).all().get();
        }
        return topic;
    }

    private static void commit(String bootstrap, String topic, long offset) {
        Properties props = common(bootstrap);
        props.put("group.id", GROUP);
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.commitSync(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(offset)),
                    Duration.ofSeconds(30));
        }
    }

    private static Properties producerProps(String bootstrap) {
        Properties props = common(bootstrap);
        props.put("acks", "all");
        props.put("linger.ms", "0");
        props.put("request.timeout.ms", "20000");
        props.put("delivery.timeout.ms", "60000");
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        return props;
    }

    private static Properties common(String bootstrap) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        return props;
    }
}
