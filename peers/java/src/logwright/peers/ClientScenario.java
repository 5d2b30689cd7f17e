package logwright.peers;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java client (kafka-clients 4.x) against one broker: producer, consumer group, share consumer.
 *
 * <p>Usage: {@code ClientScenario BOOTSTRAP
 * producer|group|consumer-protocol|share|share-offsets|share-dlq|transactions|streams|quotas|sasl|tls|leader-epoch}. The
 * consumer-protocol step is the group step with {@code group.protocol=consumer} (KIP-848). Each step prints
 * {@code OK <step>} and exits 0, or prints what it saw and exits 1, so the pytest that runs it can name the
 * failing step. The share step uses explicit acknowledgement: it releases the first record once, checks
 * that it comes back with delivery count 2, and accepts everything. The share-offsets step sets a share
 * group's start offsets with the Admin client, consumes from there, lists the offsets and lags, and deletes
 * them (DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets). The share-dlq step sets
 * KIP-1191's {@code errors.deadletterqueue.topic.name}: a REJECTed record and one RELEASEd until the delivery
 * limit must each be on the dead-letter topic exactly once, with the {@code __dlq.errors.*} headers (Kafka
 * writes them only on a cluster formatted with {@code share.version=2}).
 * The transactions step is a consume-transform-produce loop as Kafka Streams' exactly-once runs it: a group
 * consumer reads the input, a transactional producer writes the output and commits the consumer's offsets in
 * the same transaction ({@code sendOffsetsToTransaction} with the consumer's group metadata); a second
 * transaction is aborted; a {@code read_committed} consumer must see exactly the committed output, a
 * {@code read_uncommitted} one the aborted records too, and a second producer with the same
 * {@code transactional.id} must fence the first. The streams step runs a Kafka Streams application
 * ({@link StreamsScenario}). The quotas step sets a client's producer byte-rate quota with the Admin client and
 * checks that its producer is throttled ({@link ClientQuotaScenario}). The sasl step stores a SCRAM credential with
 * the Admin client and writes and reads through the broker's SASL_PLAINTEXT listener with SCRAM-SHA-512 and PLAIN
 * ({@link SaslScenario}). The tls step writes and reads through the SSL and SASL_SSL listeners with PEM stores
 * ({@link TlsScenario}). The leader-epoch step resumes consumers from offsets committed with a leader epoch, which
 * the consumer validates with OffsetForLeaderEpoch ({@link LeaderEpochScenario}).
 */
public final class ClientScenario {
    private static final int COUNT = 50;
    private static final Duration WAIT = Duration.ofSeconds(60);

    private ClientScenario() {
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String step = args[1];
        String topic = "java-" + step + "-" + UUID.randomUUID().toString().substring(0, 8);
        createTopic(bootstrap, topic, 2);
        switch (step) {
            case "producer" -> produce(bootstrap, topic);
            case "group" -> {
                produce(bootstrap, topic);
                consumerGroup(bootstrap, topic, "classic");
            }
            case "consumer-protocol" -> {
                produce(bootstrap, topic);
                consumerGroup(bootstrap, topic, "consumer");
            }
            case "share" -> shareGroup(bootstrap, topic);
            case "share-offsets" -> shareGroupOffsets(bootstrap, topic);
            case "share-dlq" -> shareDeadLetters(bootstrap, topic);
            case "streams" -> StreamsScenario.run(bootstrap, topic);
            case "quotas" -> ClientQuotaScenario.run(bootstrap, topic);
            case "sasl" -> SaslScenario.run(bootstrap, topic);
            case "tls" -> TlsScenario.run(topic);
            case "leader-epoch" -> LeaderEpochScenario.run(bootstrap, topic);
            case "transactions" -> {
                produce(bootstrap, topic);
                transactions(bootstrap, topic);
            }
            default -> fail("unknown step " + step);
        }
        System.out.println("OK " + step);
    }

    private static void fail(String message) {
        System.out.println("FAIL " + message);
        System.exit(1);
    }

    private static Properties common(String bootstrap) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        return props;
    }

    private static void createTopic(String bootstrap, String topic, int partitions) throws Exception {
        try (Admin admin = Admin.create(common(bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (!admin.listTopics().names().get().contains(topic)) {
                if (System.nanoTime() > deadline) {
                    fail("topic " + topic + " was created but is not listed");
                }
                Thread.sleep(100);
            }
        }
    }

    private static void produce(String bootstrap, String topic) throws Exception {
        Properties props = common(bootstrap);
        props.put("acks", "all");
        props.put("enable.idempotence", "true");
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        Map<Integer, Long> next = new HashMap<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < COUNT; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, i % 2, "k" + i, "v" + i)));
            }
            for (var future : sent) {
                RecordMetadata metadata = future.get();
                long expected = next.getOrDefault(metadata.partition(), 0L);
                if (metadata.offset() != expected) {
                    fail("partition " + metadata.partition() + " got offset " + metadata.offset()
                            + ", expected " + expected);
                }
                next.put(metadata.partition(), expected + 1);
            }
        }
        if (next.getOrDefault(0, 0L) + next.getOrDefault(1, 0L) != COUNT) {
            fail("acknowledged offsets " + next);
        }
    }

    private static Properties consumerProps(String bootstrap, String group) {
        Properties props = common(bootstrap);
        props.put("group.id", group);
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        return props;
    }

    private static void consumerGroup(String bootstrap, String topic, String protocol) throws Exception {
        String group = topic + "-group";
        Properties props = consumerProps(bootstrap, group);
        props.put("group.protocol", protocol);
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        Set<String> seen = new java.util.HashSet<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (seen.size() < COUNT && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    seen.add(record.value());
                }
            }
            consumer.commitSync();
        }
        if (seen.size() != COUNT) {
            fail("the group consumer saw " + seen.size() + " of " + COUNT + " records");
        }
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps(bootstrap, group))) {
            Set<TopicPartition> partitions = Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(partitions, WAIT);
            long total = committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
            if (total != COUNT) {
                fail("committed offsets " + committed);
            }
        }
    }

    private static void shareGroup(String bootstrap, String topic) throws Exception {
        String group = topic + "-share";
        try (Admin admin = Admin.create(common(bootstrap))) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            Collection<AlterConfigOp> ops = List.of(new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET));
            admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
        }
        produce(bootstrap, topic);
        Properties props = consumerProps(bootstrap, group);
        props.put("share.acknowledgement.mode", "explicit");
        Set<String> accepted = new java.util.HashSet<>();
        String released = null;
        boolean redelivered = false;
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + WAIT.toNanos();
            while ((accepted.size() < COUNT || !redelivered) && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    short deliveries = record.deliveryCount().orElse((short) 0);
                    if (released == null) {
                        released = record.value();
                        consumer.acknowledge(record, AcknowledgeType.RELEASE);
                        continue;
                    }
                    if (record.value().equals(released)) {
                        if (deliveries != 2) {
                            fail("the released record came back with delivery count " + deliveries);
                        }
                        redelivered = true;
                    }
                    accepted.add(record.value());
                    consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                }
                consumer.commitSync();
            }
        }
        if (accepted.size() != COUNT || !redelivered) {
            fail("the share consumer accepted " + accepted.size() + " of " + COUNT
                    + " records; released record redelivered: " + redelivered);
        }
    }

    private static void shareDeadLetters(String bootstrap, String topic) throws Exception {
        String group = topic + "-dlq";
        String dlq = "dlq." + topic;
        try (Admin admin = Admin.create(common(bootstrap))) {
            admin.createTopics(List.of(new NewTopic(dlq, 1, (short) 1).configs(
                    Map.of("errors.deadletterqueue.group.enable", "true")))).all().get();
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            Collection<AlterConfigOp> ops = List.of(
                    new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("errors.deadletterqueue.topic.name", dlq),
                            AlterConfigOp.OpType.SET));
            admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
        }
        Properties producerProps = common(bootstrap);
        producerProps.put("acks", "all");
        producerProps.put("key.serializer", StringSerializer.class.getName());
        producerProps.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            for (String value : List.of("reject", "limit", "fine")) {
                producer.send(new ProducerRecord<>(topic, 0, value, value)).get();
            }
        }
        Properties props = consumerProps(bootstrap, group);
        props.put("share.acknowledgement.mode", "explicit");
        Properties readerProps = consumerProps(bootstrap, group + "-reader");
        readerProps.put("auto.offset.reset", "earliest");
        Map<String, Map<String, String>> copies = new java.util.TreeMap<>();
        int extra = 0;
        short limitDeliveries = 0;
        boolean fineAccepted = false;
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props);
             KafkaConsumer<String, String> reader = new KafkaConsumer<>(readerProps)) {
            consumer.subscribe(List.of(topic));
            reader.subscribe(List.of(dlq));
            long deadline = System.nanoTime() + WAIT.toNanos();
            int quietAfterBoth = 0;
            while (System.nanoTime() < deadline && quietAfterBoth < 4) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    switch (record.value()) {
                        case "reject" -> consumer.acknowledge(record, AcknowledgeType.REJECT);
                        case "limit" -> {
                            limitDeliveries = record.deliveryCount().orElse((short) 0);
                            consumer.acknowledge(record, AcknowledgeType.RELEASE);
                        }
                        default -> {
                            fineAccepted = true;
                            consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                        }
                    }
                }
                consumer.commitSync();
                for (ConsumerRecord<String, String> copy : reader.poll(Duration.ofMillis(200))) {
                    Map<String, String> headers = new java.util.TreeMap<>();
                    copy.headers().forEach(h -> headers.put(h.key(),
                            h.value() == null ? null : new String(h.value(), java.nio.charset.StandardCharsets.UTF_8)));
                    if (copies.put(headers.getOrDefault("__dlq.errors.offset", "?"), headers) != null) {
                        extra++;
                    }
                }
                quietAfterBoth = copies.size() >= 2 && fineAccepted ? quietAfterBoth + 1 : 0;
            }
        }
        if (!fineAccepted || copies.size() != 2 || extra != 0) {
            fail("dead-letter copies by offset " + copies + " (" + extra + " duplicates); fine accepted: "
                    + fineAccepted + "; 'limit' delivered " + limitDeliveries + " times");
        }
        checkCopy(copies.get("0"), topic, group, "1");
        checkCopy(copies.get("1"), topic, group, Short.toString(limitDeliveries));
    }

    private static void checkCopy(Map<String, String> headers, String topic, String group, String deliveries) {
        if (headers == null || !topic.equals(headers.get("__dlq.errors.topic"))
                || !"0".equals(headers.get("__dlq.errors.partition"))
                || !group.equals(headers.get("__dlq.errors.group"))
                || !deliveries.equals(headers.get("__dlq.errors.delivery.count"))
                || !headers.containsKey("__dlq.errors.message")) {
            fail("dead-letter copy headers " + headers + ", expected delivery count " + deliveries);
        }
    }

    private static Map<TopicPartition, SharePartitionOffsetInfo> listShareOffsets(Admin admin, String group)
            throws Exception {
        return admin.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                .partitionsToOffsetInfo(group).get();
    }

    private static String offsetsAndLags(Map<TopicPartition, SharePartitionOffsetInfo> offsets) {
        Map<Integer, String> found = new java.util.TreeMap<>();
        offsets.forEach((partition, info) ->
                found.put(partition.partition(), info.startOffset() + "/" + info.lag().orElse(-1L)));
        return found.toString();
    }

    private static void shareGroupOffsets(String bootstrap, String topic) throws Exception {
        String group = topic + "-share";
        produce(bootstrap, topic);
        TopicPartition first = new TopicPartition(topic, 0);
        TopicPartition second = new TopicPartition(topic, 1);
        try (Admin admin = Admin.create(common(bootstrap))) {
            admin.alterShareGroupOffsets(group, Map.of(first, 10L, second, 20L)).all().get();
            String listed = offsetsAndLags(listShareOffsets(admin, group));
            if (!listed.equals("{0=10/15, 1=20/5}")) {
                fail("after the alter, start offset/lag per partition: " + listed);
            }
            Properties props = consumerProps(bootstrap, group);
            props.put("share.acknowledgement.mode", "explicit");
            Set<String> accepted = new java.util.HashSet<>();
            try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props)) {
                consumer.subscribe(List.of(topic));
                long deadline = System.nanoTime() + WAIT.toNanos();
                while (accepted.size() < 20 && System.nanoTime() < deadline) {
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                        long floor = record.partition() == 0 ? 10 : 20;
                        if (record.offset() < floor) {
                            fail("record " + record.partition() + "@" + record.offset() + " is below the start offset");
                        }
                        accepted.add(record.partition() + "@" + record.offset());
                        consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                    }
                    consumer.commitSync();
                }
            }
            if (accepted.size() != 20) {
                fail("the share consumer accepted " + accepted.size() + " of 20 records from the start offsets");
            }
            // Everything is acknowledged: no lag. Kafka 4.4 may still report the altered start offsets
            // (its share-partition start offset moves on lazily), logwright reports 25.
            Map<TopicPartition, SharePartitionOffsetInfo> consumed = listShareOffsets(admin, group);
            for (var entry : consumed.entrySet()) {
                long altered = entry.getKey().partition() == 0 ? 10 : 20;
                long start = entry.getValue().startOffset();
                if (entry.getValue().lag().orElse(-1L) != 0 || (start != altered && start != 25)) {
                    fail("after consuming, start offset/lag per partition: " + offsetsAndLags(consumed));
                }
            }
            if (consumed.size() != 2) {
                fail("after consuming, start offset/lag per partition: " + offsetsAndLags(consumed));
            }
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (true) {
                try {
                    admin.deleteShareGroupOffsets(group, Set.of(topic)).all().get();
                    break;
                } catch (java.util.concurrent.ExecutionException error) {
                    // The consumer's leave may still be on its way (GroupNotEmptyException): try again.
                    if (System.nanoTime() > deadline) {
                        fail("deleting the share group offsets: " + error.getCause());
                    }
                    Thread.sleep(200);
                }
            }
            Map<TopicPartition, SharePartitionOffsetInfo> deleted = listShareOffsets(admin, group);
            if (!deleted.isEmpty()) {
                fail("after the delete, offsets are still listed: " + offsetsAndLags(deleted));
            }
        }
    }

    private static KafkaProducer<String, String> transactionalProducer(String bootstrap, String transactionalId) {
        Properties props = common(bootstrap);
        props.put("transactional.id", transactionalId);
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        KafkaProducer<String, String> producer = new KafkaProducer<>(props);
        producer.initTransactions();
        return producer;
    }

    /** The output topic's values as a consumer of {@code isolation} reads them, until {@code expected} are in. */
    private static List<String> readAll(String bootstrap, String topic, String isolation, int expected) {
        Properties props = consumerProps(bootstrap, topic + "-" + isolation);
        props.put("isolation.level", isolation);
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.assign(List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)));
            long deadline = System.nanoTime() + WAIT.toNanos();
            int quiet = 0;
            // A few empty polls after the expected count: more records than expected must be seen too.
            while (System.nanoTime() < deadline && quiet < 3) {
                var records = consumer.poll(Duration.ofMillis(300));
                records.forEach(record -> values.add(record.value()));
                quiet = values.size() >= expected && records.isEmpty() ? quiet + 1 : 0;
            }
        }
        return values;
    }

    private static void transactions(String bootstrap, String input) throws Exception {
        String output = input + "-out";
        createTopic(bootstrap, output, 2);
        String group = input + "-eos";
        String transactionalId = input + "-txn";
        Properties consumerProps = consumerProps(bootstrap, group);
        consumerProps.put("auto.offset.reset", "earliest");
        consumerProps.put("enable.auto.commit", "false");
        consumerProps.put("isolation.level", "read_committed");
        Map<TopicPartition, OffsetAndMetadata> consumed = new HashMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps);
             KafkaProducer<String, String> producer = transactionalProducer(bootstrap, transactionalId)) {
            consumer.subscribe(List.of(input));
            producer.beginTransaction();
            int transformed = 0;
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (transformed < COUNT && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    producer.send(new ProducerRecord<>(output, record.partition(), record.key(),
                            "out-" + record.value()));
                    consumed.put(new TopicPartition(record.topic(), record.partition()),
                            new OffsetAndMetadata(record.offset() + 1));
                    transformed++;
                }
            }
            if (transformed != COUNT) {
                fail("the transforming consumer read " + transformed + " of " + COUNT + " records");
            }
            ConsumerGroupMetadata metadata = consumer.groupMetadata();
            if (metadata.generationId() < 0) {
                fail("the transforming consumer has no generation: " + metadata);
            }
            producer.sendOffsetsToTransaction(consumed, metadata);
            producer.commitTransaction();

            producer.beginTransaction();
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(output, i % 2, "a" + i, "aborted-" + i));
            }
            producer.flush();
            producer.abortTransaction();

            // A second instance with the same transactional.id fences this one.
            try (KafkaProducer<String, String> successor = transactionalProducer(bootstrap, transactionalId)) {
                boolean fenced = false;
                try {
                    producer.beginTransaction();
                    producer.send(new ProducerRecord<>(output, 0, "z", "zombie")).get();
                    producer.commitTransaction();
                } catch (ExecutionException | KafkaException error) {
                    // Transaction version 1 (logwright) fences at AddPartitionsToTxn: ProducerFencedException;
                    // version 2 (Kafka 4.4's default) at the Produce itself: InvalidProducerEpochException.
                    Throwable cause = error instanceof ExecutionException ? error.getCause() : error;
                    fenced = cause instanceof ProducerFencedException || cause instanceof InvalidProducerEpochException;
                    if (!fenced) {
                        fail("the fenced producer failed with " + error + ", not as fenced");
                    }
                }
                if (!fenced) {
                    fail("a second producer with the same transactional.id did not fence the first");
                }
                successor.beginTransaction();
                successor.send(new ProducerRecord<>(output, 0, "s", "successor")).get();
                successor.commitTransaction();
            }
        }
        List<String> committed = readAll(bootstrap, output, "read_committed", COUNT + 1);
        Set<String> expected = new java.util.HashSet<>();
        for (int i = 0; i < COUNT; i++) {
            expected.add("out-v" + i);
        }
        expected.add("successor");
        if (committed.size() != expected.size() || !expected.equals(new java.util.HashSet<>(committed))) {
            fail("read_committed saw " + committed.size() + " records, expected " + expected.size() + ": "
                    + committed.stream().filter(v -> !expected.contains(v)).toList() + " unexpected");
        }
        List<String> uncommitted = readAll(bootstrap, output, "read_uncommitted", COUNT + 11);
        long aborted = uncommitted.stream().filter(v -> v.startsWith("aborted-")).count();
        if (aborted != 10 || uncommitted.contains("zombie") || uncommitted.size() != COUNT + 11
                || !uncommitted.containsAll(expected)) {
            fail("read_uncommitted saw " + uncommitted.size() + " records, " + aborted + " of them aborted");
        }
        try (KafkaConsumer<String, String> checker = new KafkaConsumer<>(consumerProps(bootstrap, group))) {
            Set<TopicPartition> partitions = Set.of(new TopicPartition(input, 0), new TopicPartition(input, 1));
            Map<TopicPartition, OffsetAndMetadata> offsets = checker.committed(partitions, WAIT);
            long total = offsets.values().stream().mapToLong(o -> o == null ? 0 : o.offset()).sum();
            if (total != COUNT) {
                fail("offsets committed in the transaction " + offsets);
            }
        }
    }
}
