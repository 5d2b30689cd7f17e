package logwright.peers;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * An unmodified Kafka Streams 4.4.0 application against one broker: a word count with exactly-once processing
 * ({@code processing.guarantee=exactly_once_v2}).
 *
 * <p>Kafka Streams is how most Java shops use Kafka, and it leans on more of the protocol than a plain client:
 * it creates its own repartition topic and compacted changelog topic, commits offsets inside transactions,
 * purges what it consumed of the repartition topic with DeleteRecords, and restores its state store from the
 * changelog. The
 * scenario counts the words of a first batch of lines, checks the counts a {@code read_committed} consumer reads
 * on the output topic, stops the application and deletes its local state, counts a second batch with a new
 * instance (which must restore the first counts from the changelog, not start from zero), and checks that the
 * changelog topic Streams created is compacted. ClientScenario's {@code streams} step runs it and prints
 * {@code OK streams}; a failure prints {@code FAIL <why>} and exits 1.
 */
public final class StreamsScenario {
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final List<String> WORDS = List.of("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta");
    private static final String STORE = "counts";

    private StreamsScenario() {
    }

    public static void run(String bootstrap, String input) throws Exception {
        String output = input + "-counts";
        String application = input + "-app";
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(new NewTopic(output, 2, (short) 1))).all().get();
        }
        Map<String, Long> expected = new TreeMap<>();
        produceLines(bootstrap, input, 0, 60, expected);
        Path stateDir = Files.createTempDirectory("logwright-streams-");
        try {
            runUntilCounted(bootstrap, input, output, application, stateDir, expected);
            deleteTree(stateDir);  // the second instance must restore the counts from the changelog
            Files.createDirectories(stateDir);
            produceLines(bootstrap, input, 60, 90, expected);
            runUntilCounted(bootstrap, input, output, application, stateDir, expected);
        } finally {
            deleteTree(stateDir);
        }
        String changelog = application + "-" + STORE + "-changelog";
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
            Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
            String policy = config.get("cleanup.policy") == null ? null : config.get("cleanup.policy").value();
            if (!"compact".equals(policy)) {
                fail("the changelog topic " + changelog + " has cleanup.policy " + policy);
            }
        }
    }

    /** Lines {@code from} to {@code to} (exclusive) of a fixed text, keyed by line number; adds their words. */
    private static void produceLines(String bootstrap, String input, int from, int to, Map<String, Long> counts)
            throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("acks", "all");
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int line = from; line < to; line++) {
                List<String> words = new ArrayList<>();
                for (int i = 0; i <= line % 4; i++) {
                    words.add(WORDS.get((line * 3 + i * 5) % WORDS.size()).toUpperCase(Locale.ROOT));
                }
                words.forEach(word -> counts.merge(word.toLowerCase(Locale.ROOT), 1L, Long::sum));
                producer.send(new ProducerRecord<>(input, "line-" + line, String.join(" ", words))).get();
            }
        }
    }

    private static KafkaStreams wordCount(String bootstrap, String input, String output, String application,
                                          Path stateDir) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(input)
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split(" ")))
                .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as(STORE))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, application);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        return new KafkaStreams(builder.build(), props);
    }

    /**
     * Run one instance until the output topic's latest count of every word is {@code expected}'s; then close it,
     * leaving the group (KIP-1153): by default a Streams member stays in the group when it closes, so the next
     * instance waited for its session to time out (45 s, on both brokers) before it was given the partitions.
     */
    private static void runUntilCounted(String bootstrap, String input, String output, String application,
                                        Path stateDir, Map<String, Long> expected) throws Exception {
        Map<String, Long> latest = new TreeMap<>();
        try (KafkaStreams streams = wordCount(bootstrap, input, output, application, stateDir);
             KafkaConsumer<String, Long> reader = outputReader(bootstrap, output)) {
            streams.setUncaughtExceptionHandler(error -> {
                System.out.println("FAIL the Streams application died: " + error);
                System.exit(1);
                return null;
            });
            streams.start();
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (!latest.equals(expected) && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, Long> record : reader.poll(Duration.ofMillis(300))) {
                    latest.put(record.key(), record.value());
                }
            }
            if (!latest.equals(expected)) {
                fail("the word counts read back " + latest + ", expected " + expected + "; the application is "
                        + streams.state());
            }
            streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                    .withTimeout(Duration.ofSeconds(30)));
        }
    }

    /** A {@code read_committed} reader of the whole output topic from offset 0 (no group). */
    private static KafkaConsumer<String, Long> outputReader(String bootstrap, String output) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("isolation.level", "read_committed");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", LongDeserializer.class.getName());
        KafkaConsumer<String, Long> reader = new KafkaConsumer<>(props);
        List<TopicPartition> partitions = List.of(new TopicPartition(output, 0), new TopicPartition(output, 1));
        reader.assign(partitions);
        reader.seekToBeginning(partitions);
        return reader;
    }

    private static void deleteTree(Path root) throws Exception {
        if (!Files.exists(root)) {
            return;
        }
        try (var paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).collect(Collectors.toList())) {
                Files.delete(path);
            }
        }
    }

    private static void fail(String message) {
        System.out.println("FAIL " + message);
        System.exit(1);
    }
}
