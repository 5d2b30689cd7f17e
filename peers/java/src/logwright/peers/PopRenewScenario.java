package logwright.peers;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * KIP-1222's RENEW from an unmodified KafkaShareConsumer (kafka-clients 4.4.0) on a share group with
 * {@code logwright.subscription.mode=pop}, where the acquisition lock is pop's invisible time and RENEW its
 * change. Driven step by step by tests/peers/test_java_pop_renew.py, which moves the broker's manual clock
 * between the steps and reads the lock from InspectCursor: the scenario polls one record ({@code POLLED
 * <offset> <delivery count>}), waits for {@code renew} on stdin, acknowledges the record with RENEW and
 * commits ({@code RENEWED}), then waits for {@code close}.
 * Usage: PopRenewScenario bootstrap topic group
 */
public final class PopRenewScenario {
    private PopRenewScenario() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        props.put("share.acknowledgement.mode", "explicit");
        BufferedReader steps = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props);
        try {
            consumer.subscribe(List.of(topic));
            ConsumerRecord<String, String> polled = null;
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (polled == null && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    polled = record;
                }
            }
            if (polled == null) {
                fail("no record polled in 60 s");
            }
            say("POLLED " + polled.offset() + " " + polled.deliveryCount().orElse((short) 0));
            expect(steps, "renew");
            consumer.acknowledge(polled, AcknowledgeType.RENEW);
            consumer.commitSync(Duration.ofSeconds(30));
            say("RENEWED");
            expect(steps, "close");
        } finally {
            try {
                consumer.close(); // the record's lock ran out meanwhile: what close sends for it may be refused
            } catch (RuntimeException closing) {
                System.err.println("close: " + closing);
            }
        }
        say("OK pop-renew");
    }

    private static void expect(BufferedReader steps, String step) throws Exception {
        String line = steps.readLine();
        if (!step.equals(line)) {
            fail("expected step " + step + ", got " + line);
        }
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static void fail(String why) {
        say("FAIL pop-renew: " + why);
        System.exit(1);
    }
}
