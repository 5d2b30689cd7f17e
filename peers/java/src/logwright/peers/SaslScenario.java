package logwright.peers;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The sasl step, on a broker with a SASL_PLAINTEXT listener (its address in the environment's
 * {@code SASL_BOOTSTRAP}; PLAIN user alice): the Admin client stores a SCRAM-SHA-512 credential
 * ({@code alterUserScramCredentials}) and reads it back ({@code describeUserScramCredentials}); a producer
 * authenticated by it with SCRAM-SHA-512 writes ten records, a consumer authenticated with PLAIN reads them back
 * through the same listener; a producer with a wrong password fails with {@code SaslAuthenticationException}; the
 * credential is then deleted. Then delegation tokens (KIP-48): an Admin client authenticated as alice creates one
 * ({@code createDelegationToken}), a producer authenticates with it ({@code tokenauth=true}) and writes, and the
 * token is expired ({@code expireDelegationToken}) and no longer described. Last, a producer authenticates with
 * OAUTHBEARER by the Java client's unsecured token (the broker's default, unsecured validator) and writes.
 */
final class SaslScenario {
    private SaslScenario() {
    }

    static void run(String bootstrap, String topic) throws Exception {
        String sasl = System.getenv("SASL_BOOTSTRAP");
        if (sasl == null || sasl.isEmpty()) {
            fail("SASL_BOOTSTRAP is not set: the broker has no SASL listener");
        }
        String user = "java-scram-" + UUID.randomUUID().toString().substring(0, 8);
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(common)) {
            admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), "java-secret"))).all().get();
            UserScramCredentialsDescription described = null;
            for (int attempt = 0; attempt < 100 && described == null; attempt++) {
                try {
                    described = admin.describeUserScramCredentials(List.of(user)).description(user).get();
                } catch (ExecutionException notYet) {
                    Thread.sleep(100);  // Kafka's broker sees its controller's change a moment later
                }
            }
            if (described == null || !described.credentialInfos().equals(
                    List.of(new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)))) {
                fail("described " + (described == null ? null : described.credentialInfos()));
            }
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(
                    login(sasl, "SCRAM-SHA-512", "org.apache.kafka.common.security.scram.ScramLoginModule", user,
                          "java-secret", serializers()))) {
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, null, "scram-" + i)).get();
                }
            }
            Properties consumerProps = login(sasl, "PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule",
                    "alice", "alice-secret", Map.of(
                            "group.id", "java-sasl-" + topic, "auto.offset.reset", "earliest",
                            "key.deserializer", StringDeserializer.class.getName(),
                            "value.deserializer", StringDeserializer.class.getName()));
            List<String> values = new ArrayList<>();
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps)) {
                consumer.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + 60_000;
                while (values.size() < 10 && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                        values.add(record.value());
                    }
                }
            }
            if (values.size() != 10 || !values.get(0).equals("scram-0") || !values.get(9).equals("scram-9")) {
                fail("the PLAIN consumer read " + values);
            }
            Map<String, Object> wrongPassword = serializers();
            wrongPassword.put("max.block.ms", "10000");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(
                    login(sasl, "SCRAM-SHA-512", "org.apache.kafka.common.security.scram.ScramLoginModule", user,
                          "wrong", wrongPassword))) {
                producer.send(new ProducerRecord<>(topic, 0, null, "never")).get();
                fail("a producer with a wrong password was not refused");
            } catch (ExecutionException refused) {
                if (!(refused.getCause() instanceof SaslAuthenticationException)) {
                    fail("a wrong password failed with " + refused.getCause());
                }
            } catch (SaslAuthenticationException refused) {
                // refused while fetching metadata, before the send
            }
            admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion(user,
                    ScramMechanism.SCRAM_SHA_512))).all().get();
        }
        delegationToken(sasl, topic);
        oauthBearer(sasl, topic);
    }

    /** A producer authenticated by the Java client's own unsecured OAUTHBEARER token (its default login handler). */
    private static void oauthBearer(String sasl, String topic) throws Exception {
        Properties props = login(sasl, "OAUTHBEARER", "unused", "unused", "unused", serializers());
        props.put("sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                + "unsecuredLoginStringClaim_sub=\"java-oauth\" unsecuredLoginListClaim_scope=\",kafka\";");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.send(new ProducerRecord<>(topic, 0, null, "oauthbearer")).get();
        }
    }

    private static void delegationToken(String sasl, String topic) throws Exception {
        Properties adminProps = login(sasl, "PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule",
                "alice", "alice-secret", Map.of());
        try (Admin admin = Admin.create(adminProps)) {
            DelegationToken token = admin.createDelegationToken().delegationToken().get();
            if (!token.tokenInfo().owner().getName().equals("alice")) {
                fail("a token owned by " + token.tokenInfo().owner());
            }
            String jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                    + token.tokenInfo().tokenId() + "\" password=\"" + token.hmacAsBase64String()
                    + "\" tokenauth=\"true\";";
            Map<String, Object> props = serializers();
            props.put("max.block.ms", "5000");
            Exception last = null;
            for (int attempt = 0; attempt < 10; attempt++) {  // Kafka's broker sees a new token a moment later
                Properties producerProps = login(sasl, "SCRAM-SHA-256", "unused", "unused", "unused", props);
                producerProps.put("sasl.jaas.config", jaas);
                try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
                    producer.send(new ProducerRecord<>(topic, 0, null, "token")).get();
                    last = null;
                    break;
                } catch (Exception refused) {
                    last = refused;
                    Thread.sleep(500);
                }
            }
            if (last != null) {
                fail("a producer with the token was refused: " + last);
            }
            admin.expireDelegationToken(token.hmac(),
                    new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1)).expiryTimestamp().get();
            List<DelegationToken> left = List.of(token);
            for (int attempt = 0; attempt < 50 && !left.isEmpty(); attempt++) {
                left = admin.describeDelegationToken().delegationTokens().get().stream()
                        .filter(described -> described.tokenInfo().tokenId().equals(token.tokenInfo().tokenId()))
                        .toList();
                Thread.sleep(left.isEmpty() ? 0 : 100);
            }
            if (!left.isEmpty()) {
                fail("the expired token is still described");
            }
        }
    }

    private static Map<String, Object> serializers() {
        Map<String, Object> props = new java.util.HashMap<>();
        props.put("acks", "all");
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        return props;
    }

    private static Properties login(String sasl, String mechanism, String module, String user, String password,
                                    Map<String, ?> extra) {
        Properties props = new Properties();
        props.putAll(extra);
        props.put("bootstrap.servers", sasl);
        props.put("security.protocol", "SASL_PLAINTEXT");
        props.put("sasl.mechanism", mechanism);
        props.put("sasl.jaas.config", module + " required username=\"" + user + "\" password=\"" + password + "\";");
        return props;
    }

    private static void fail(String message) {
        System.out.println("FAIL " + message);
        System.exit(1);
    }
}
