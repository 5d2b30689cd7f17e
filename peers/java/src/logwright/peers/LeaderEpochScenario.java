package logwright.peers;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.LogTruncationException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java consumer's position validation (KIP-320) through OffsetForLeaderEpoch.
 *
 * <p>Run by {@link ClientScenario}'s {@code leader-epoch} step on partition 0 of its topic. A consumer resuming from an offset committed with its
 * leader epoch asks the broker where that epoch ends before it fetches (it skips the check against a broker whose
 * ApiVersions lacks the key). A group resumes from offset 2 of 5 committed at the records' epoch and reads the
 * three after it. A group whose committed offset (9) lies past the end of epoch 0 must fail with a
 * {@link LogTruncationException} naming where the epoch ends (5) under {@code auto.offset.reset=none}: a broker
 * that did not answer the request would have the fetch answered OFFSET_OUT_OF_RANGE instead, the exception's
 * parent class.
 */
public final class LeaderEpochScenario {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int COUNT = 5;

    private LeaderEpochScenario() {
    }

    private static void fail(String message) {
        System.out.println("FAIL " + message);
        System.exit(1);
    }

    public static void run(String bootstrap, String topic) throws Exception {
        TopicPartition partition = new TopicPartition(topic, 0);
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        Properties producerProps = (Properties) common.clone();
        producerProps.put("key.serializer", StringSerializer.class.getName());
        producerProps.put("value.serializer", StringSerializer.class.getName());
        int epoch = -1;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            for (int i = 0; i < COUNT; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, "v" + i)).get(60, TimeUnit.SECONDS);
            }
        }
        try (KafkaConsumer<String, String> reader = new KafkaConsumer<>(consumerProps(common, topic + "-reader", "earliest"))) {
            reader.assign(List.of(partition));
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (epoch < 0 && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> record : reader.poll(Duration.ofMillis(200))) {
                    epoch = record.leaderEpoch().orElse(-1);
                }
            }
        }
        if (epoch < 0) {
            fail("no record read carried a leader epoch");
        }

        String resuming = topic + "-resuming";
        commit(common, resuming, partition, 2, epoch);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps(common, resuming, "none"))) {
            consumer.assign(List.of(partition));
            StringBuilder read = new StringBuilder();
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (read.length() < 6 && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    read.append(record.value());
                }
            }
            if (!read.toString().equals("v2v3v4")) {
                fail("resumed from offset 2 at epoch " + epoch + " and read " + read);
            }
        }

        String truncated = topic + "-truncated";
        commit(common, truncated, partition, 9, epoch);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps(common, truncated, "none"))) {
            consumer.assign(List.of(partition));
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (System.nanoTime() < deadline) {
                try {
                    consumer.poll(Duration.ofMillis(200));
                } catch (LogTruncationException error) {
                    OffsetAndMetadata divergent = error.divergentOffsets().get(partition);
                    if (divergent == null || divergent.offset() != COUNT
                            || !divergent.leaderEpoch().equals(Optional.of(epoch))) {
                        fail("truncation found with divergent offsets " + error.divergentOffsets());
                    }
                    return;
                } catch (RuntimeException error) {
                    fail("a position past the end of epoch " + epoch + " raised " + error);
                }
            }
            fail("a position past the end of epoch " + epoch + " was not refused");
        }
    }

    private static Properties consumerProps(Properties common, String group, String reset) {
        Properties props = (Properties) common.clone();
        props.put("group.id", group);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", reset);
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        return props;
    }

    private static void commit(Properties common, String group, TopicPartition partition, long offset, int epoch) {
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps(common, group, "none"))) {
            consumer.commitSync(Map.of(partition, new OffsetAndMetadata(offset, Optional.of(epoch), "")), WAIT);
        }
    }
}
