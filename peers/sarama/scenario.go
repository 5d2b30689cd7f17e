// The Sarama scenario: one step per run, against the broker at os.Args[1]; prints "OK <step>" or "FAIL <why>".
//
// Sarama (IBM/sarama) is the Go client most Go services run, with its own protocol code: which API versions it
// sends follows Config.Version, so the producer and group steps run at Sarama's default (2.8, older request
// versions) and the transactions and admin steps at the newest it knows. peers/sarama_client.py runs every step
// against logwright or Apache Kafka; the checks are the same for both. Each step makes its own topics and groups.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

var (
	bootstrap []string
	unique    = fmt.Sprintf("%d-%d", time.Now().UnixNano(), rand.Intn(1_000_000))
)

type failure struct{ why string }

// check stops the step with its reason when the condition does not hold.
func check(condition bool, format string, args ...any) {
	if !condition {
		panic(failure{fmt.Sprintf(format, args...)})
	}
}

func must(err error, what string) {
	if err != nil {
		panic(failure{fmt.Sprintf("%s: %v", what, err)})
	}
}

func config(version sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "logwright-sarama-scenario"
	cfg.Metadata.Retry.Max = 10
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Return.Errors = true
	return cfg
}

func newAdmin(cfg *sarama.Config) sarama.ClusterAdmin {
	admin, err := sarama.NewClusterAdmin(bootstrap, cfg)
	must(err, "admin client")
	return admin
}

func createTopic(admin sarama.ClusterAdmin, topic string, partitions int32, configs map[string]*string) {
	must(admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1,
		ConfigEntries: configs}, false), "create topic "+topic)
}

type record struct {
	partition int32
	offset    int64
	key       string
	value     string
	headers   map[string]string
}

// readAll reads every partition of topic from its oldest offset until count records arrived or the timeout passed.
func readAll(cfg *sarama.Config, topic string, count int, timeout time.Duration) []record {
	consumer, err := sarama.NewConsumer(bootstrap, cfg)
	must(err, "consumer")
	defer consumer.Close()
	partitions, err := consumer.Partitions(topic)
	must(err, "partitions of "+topic)
	out := make(chan record, count+16)
	for _, partition := range partitions {
		pc, err := consumer.ConsumePartition(topic, partition, sarama.OffsetOldest)
		must(err, "consume partition")
		defer pc.Close()
		go func(pc sarama.PartitionConsumer) {
			for m := range pc.Messages() {
				headers := map[string]string{}
				for _, h := range m.Headers {
					headers[string(h.Key)] = string(h.Value)
				}
				out <- record{m.Partition, m.Offset, string(m.Key), string(m.Value), headers}
			}
		}(pc)
	}
	var records []record
	deadline := time.After(timeout)
	for len(records) < count {
		select {
		case r := <-out:
			records = append(records, r)
		case <-deadline:
			return records
		}
	}
	return records
}

// producer: an idempotent producer sends keyed batches with headers, each in another codec (gzip, snappy, lz4,
// zstd); a consumer reads every record back: each key on one partition, in the order sent, headers intact.
func producer() {
	cfg := config(sarama.DefaultVersion)
	admin := newAdmin(cfg)
	defer admin.Close()
	topic := "sarama-produce-" + unique
	createTopic(admin, topic, 3, nil)
	codecs := []sarama.CompressionCodec{sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4,
		sarama.CompressionZSTD}
	sent := 0
	for round, codec := range codecs {
		pcfg := config(sarama.DefaultVersion)
		pcfg.Producer.Idempotent = true
		pcfg.Net.MaxOpenRequests = 1
		pcfg.Producer.Compression = codec
		pcfg.Producer.Flush.Messages = 20
		pcfg.Producer.Flush.Frequency = 5 * time.Millisecond
		producer, err := sarama.NewSyncProducer(bootstrap, pcfg)
		must(err, "producer")
		var messages []*sarama.ProducerMessage
		for key := 0; key < 25; key++ {
			messages = append(messages, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", key)),
				Value: sarama.StringEncoder(fmt.Sprintf("%d:%d", key, round)),
				Headers: []sarama.RecordHeader{{Key: []byte("round"), Value: []byte(strconv.Itoa(round))},
					{Key: []byte("codec"), Value: []byte(codec.String())}}})
		}
		must(producer.SendMessages(messages), "send with "+codec.String())
		sent += len(messages)
		must(producer.Close(), "producer close")
	}
	var end int64
	client, err := sarama.NewClient(bootstrap, cfg)
	must(err, "client")
	defer client.Close()
	for partition := int32(0); partition < 3; partition++ {
		offset, err := client.GetOffset(topic, partition, sarama.OffsetNewest)
		must(err, "end offset")
		end += offset
	}
	check(end == int64(sent), "the end offsets add up to %d, not the %d records sent", end, sent)
	records := readAll(cfg, topic, sent, 30*time.Second)
	check(len(records) == sent, "read %d of %d records", len(records), sent)
	sort.Slice(records, func(i, j int) bool {
		if records[i].partition != records[j].partition {
			return records[i].partition < records[j].partition
		}
		return records[i].offset < records[j].offset
	})
	type last struct {
		partition int32
		round     int
	}
	byKey := map[string]last{}
	for _, r := range records {
		parts := strings.Split(r.value, ":")
		round, _ := strconv.Atoi(parts[1])
		check(r.key == "k"+parts[0], "record %s came back with key %s", r.value, r.key)
		check(r.headers["round"] == parts[1] && r.headers["codec"] == codecs[round].String(),
			"record %s lost its headers: %v", r.value, r.headers)
		if previous, seen := byKey[r.key]; seen {
			check(previous.partition == r.partition, "key %s is on two partitions", r.key)
			check(previous.round+1 == round, "key %s: round %d after %d", r.key, round, previous.round)
		}
		byKey[r.key] = last{r.partition, round}
	}
	check(len(byKey) == 25, "%d keys of 25", len(byKey))
}

type member struct {
	name    string
	mu      *sync.Mutex
	seen    map[string]int
	claimed map[string]int
}

func (m member) Setup(session sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, partitions := range session.Claims() {
		m.claimed[m.name] = len(partitions)
	}
	return nil
}

func (m member) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (m member) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for message := range claim.Messages() {
		m.mu.Lock()
		m.seen[string(message.Value)]++
		m.mu.Unlock()
		session.MarkMessage(message, "")
	}
	return nil
}

// group: two members of one group share a 4-partition topic after a rebalance and commit as they go; a third
// member, started after both left, reads only what was produced since (the committed offsets); the group's offsets
// read through the admin client are the topic's end.
func group() {
	cfg := config(sarama.DefaultVersion)
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	admin := newAdmin(cfg)
	defer admin.Close()
	topic := "sarama-group-" + unique
	groupID := "sarama-group-" + unique
	createTopic(admin, topic, 4, nil)
	producer, err := sarama.NewSyncProducer(bootstrap, cfg)
	must(err, "producer")
	defer producer.Close()
	send := func(from, to int) {
		var messages []*sarama.ProducerMessage
		for i := from; i < to; i++ {
			messages = append(messages, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(strconv.Itoa(i)),
				Value: sarama.StringEncoder(strconv.Itoa(i))})
		}
		must(producer.SendMessages(messages), "send")
	}
	send(0, 100)
	state := member{mu: &sync.Mutex{}, seen: map[string]int{}, claimed: map[string]int{}}
	distinct := func() int {
		state.mu.Lock()
		defer state.mu.Unlock()
		return len(state.seen)
	}
	waitFor := func(condition func() bool, why func() string) {
		deadline := time.Now().Add(45 * time.Second)
		for !condition() {
			check(time.Now().Before(deadline), "%s", why())
			time.Sleep(100 * time.Millisecond)
		}
	}
	join := func(name string) (sarama.ConsumerGroup, context.CancelFunc, *sync.WaitGroup) {
		consumerGroup, err := sarama.NewConsumerGroup(bootstrap, groupID, cfg)
		must(err, "consumer group "+name)
		ctx, cancel := context.WithCancel(context.Background())
		var done sync.WaitGroup
		done.Add(1)
		go func() {
			defer done.Done()
			for ctx.Err() == nil {
				_ = consumerGroup.Consume(ctx, []string{topic}, member{name, state.mu, state.seen, state.claimed})
			}
		}()
		return consumerGroup, cancel, &done
	}
	first, stopFirst, firstDone := join("first")
	waitFor(func() bool { return distinct() == 100 }, func() string { return fmt.Sprintf("the first member read %d of 100", distinct()) })
	second, stopSecond, secondDone := join("second")
	shared := func() bool {
		state.mu.Lock()
		defer state.mu.Unlock()
		return state.claimed["first"] > 0 && state.claimed["second"] > 0 && state.claimed["first"]+state.claimed["second"] == 4
	}
	waitFor(shared, func() string { return fmt.Sprintf("the partitions were not shared: %v", state.claimed) })
	send(100, 200)
	waitFor(func() bool { return distinct() == 200 }, func() string { return fmt.Sprintf("the two members read %d of 200", distinct()) })
	stopFirst()
	stopSecond()
	firstDone.Wait()
	secondDone.Wait()
	must(first.Close(), "first member close")
	must(second.Close(), "second member close")
	offsets, err := admin.ListConsumerGroupOffsets(groupID, map[string][]int32{topic: {0, 1, 2, 3}})
	must(err, "group offsets")
	var sum int64
	for _, block := range offsets.Blocks[topic] {
		sum += block.Offset
	}
	check(sum == 200, "the group committed up to %d, not the 200 read", sum)
	described, err := admin.DescribeConsumerGroups([]string{groupID})
	must(err, "describe group")
	check(described[0].State == "Empty" && described[0].ProtocolType == "consumer",
		"the group after both left: %s %s", described[0].State, described[0].ProtocolType)
	send(200, 210)
	state.seen = map[string]int{}
	third, stopThird, thirdDone := join("third")
	waitFor(func() bool { return distinct() == 10 }, func() string { return fmt.Sprintf("the third member read %d of 10", distinct()) })
	time.Sleep(time.Second)
	stopThird()
	thirdDone.Wait()
	must(third.Close(), "third member close")
	state.mu.Lock()
	for value := range state.seen {
		number, _ := strconv.Atoi(value)
		check(number >= 200, "resuming from the commits read %s again", value)
	}
	state.mu.Unlock()
	groups, err := admin.ListConsumerGroups()
	must(err, "list groups")
	_, listed := groups[groupID]
	check(listed, "the group is not listed")
}

// transactions: consume-transform-produce in transactions (the input's offsets committed with the records), an
// aborted transaction that a read_committed consumer never sees and a read_uncommitted one does, and a zombie fenced
// by a second producer with the same transactional id.
func transactions() {
	cfg := config(sarama.MaxVersion)
	admin := newAdmin(cfg)
	defer admin.Close()
	input, output := "sarama-tx-in-"+unique, "sarama-tx-out-"+unique
	groupID := "sarama-tx-" + unique
	createTopic(admin, input, 1, nil)
	createTopic(admin, output, 2, nil)
	plain, err := sarama.NewSyncProducer(bootstrap, cfg)
	must(err, "producer")
	for i := 0; i < 20; i++ {
		_, _, err := plain.SendMessage(&sarama.ProducerMessage{Topic: input, Value: sarama.StringEncoder(strconv.Itoa(i))})
		must(err, "send input")
	}
	must(plain.Close(), "producer close")

	transactional := func() sarama.SyncProducer {
		tcfg := config(sarama.MaxVersion)
		tcfg.Producer.Idempotent = true
		tcfg.Net.MaxOpenRequests = 1
		tcfg.Producer.Transaction.ID = "sarama-tx-" + unique
		producer, err := sarama.NewSyncProducer(bootstrap, tcfg)
		must(err, "transactional producer")
		return producer
	}
	producer := transactional()
	inputs := readAll(cfg, input, 20, 30*time.Second)
	check(len(inputs) == 20, "read %d of 20 inputs", len(inputs))
	for start := 0; start < 20; start += 5 {
		must(producer.BeginTxn(), "begin")
		for _, r := range inputs[start : start+5] {
			_, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: output, Key: sarama.StringEncoder(r.value),
				Value: sarama.StringEncoder("x" + r.value)})
			must(err, "send in a transaction")
		}
		must(producer.AddOffsetsToTxn(map[string][]*sarama.PartitionOffsetMetadata{input: {{Partition: 0,
			Offset: inputs[start+4].offset + 1}}}, groupID), "offsets to the transaction")
		must(producer.CommitTxn(), "commit")
	}
	must(producer.BeginTxn(), "begin the aborted one")
	for _, value := range []string{"aborted-1", "aborted-2"} {
		_, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: output, Value: sarama.StringEncoder(value)})
		must(err, "send to abort")
	}
	must(producer.AbortTxn(), "abort")

	offsets, err := admin.ListConsumerGroupOffsets(groupID, map[string][]int32{input: {0}})
	must(err, "group offsets")
	check(offsets.Blocks[input][0].Offset == 20, "the transactions committed the input at %d, not 20",
		offsets.Blocks[input][0].Offset)

	committedCfg := config(sarama.MaxVersion)
	committedCfg.Consumer.IsolationLevel = sarama.ReadCommitted
	values := func(records []record) []string {
		var out []string
		for _, r := range records {
			out = append(out, r.value)
		}
		sort.Strings(out)
		return out
	}
	committed := values(readAll(committedCfg, output, 21, 3*time.Second))
	check(len(committed) == 20 && strings.HasPrefix(committed[0], "x"), "read_committed read %v", committed)
	everything := values(readAll(cfg, output, 22, 30*time.Second))
	check(len(everything) == 22 && everything[1] == "aborted-2",
		"read_uncommitted read %v, not the 20 committed and the 2 aborted", everything)

	successor := transactional()
	must(producer.BeginTxn(), "the zombie's begin")
	_, _, sendErr := producer.SendMessage(&sarama.ProducerMessage{Topic: output, Value: sarama.StringEncoder("zombie")})
	commitErr := producer.CommitTxn()
	fenced := func(err error) bool {
		return errors.Is(err, sarama.ErrProducerFenced) || errors.Is(err, sarama.ErrInvalidProducerEpoch)
	}
	check(fenced(sendErr) || fenced(commitErr), "the zombie was not fenced (send: %v, commit: %v)", sendErr, commitErr)
	_ = producer.Close()
	must(successor.BeginTxn(), "the successor's begin")
	_, _, err = successor.SendMessage(&sarama.ProducerMessage{Topic: output, Value: sarama.StringEncoder("successor")})
	must(err, "the successor's send")
	must(successor.CommitTxn(), "the successor's commit")
	must(successor.Close(), "successor close")
	last := values(readAll(committedCfg, output, 22, 3*time.Second))
	check(len(last) == 21 && last[0] == "successor", "read_committed after the fencing read %v", last)
}

// admin: topic configs at creation, described and altered (whole and incrementally); records deleted below an
// offset, and refused (POLICY_VIOLATION) once the topic is compact-only; more partitions; a group's committed
// offset deleted, then the group; the topic deleted.
func admin() {
	cfg := config(sarama.MaxVersion)
	admin := newAdmin(cfg)
	defer admin.Close()
	topic := "sarama-admin-" + unique
	hour := "3600000"
	createTopic(admin, topic, 2, map[string]*string{"retention.ms": &hour})
	configOf := func(name string) string {
		entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic,
			ConfigNames: []string{name}})
		must(err, "describe configs")
		for _, entry := range entries {
			if entry.Name == name {
				return entry.Value
			}
		}
		return "<missing>"
	}
	check(configOf("retention.ms") == hour, "retention.ms set at creation reads %s", configOf("retention.ms"))

	manual := config(sarama.MaxVersion)
	manual.Producer.Partitioner = sarama.NewManualPartitioner
	producer, err := sarama.NewSyncProducer(bootstrap, manual)
	must(err, "producer")
	for i := 0; i < 10; i++ {
		_, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)),
			Value: sarama.StringEncoder(strconv.Itoa(i))})
		must(err, "send")
	}
	must(producer.Close(), "producer close")
	client, err := sarama.NewClient(bootstrap, cfg)
	must(err, "client")
	defer client.Close()
	lowAndHigh := func() string {
		low, err := client.GetOffset(topic, 0, sarama.OffsetOldest)
		must(err, "log start")
		high, err := client.GetOffset(topic, 0, sarama.OffsetNewest)
		must(err, "log end")
		return fmt.Sprintf("%d-%d", low, high)
	}
	must(admin.DeleteRecords(topic, map[int32]int64{0: 4}), "delete records below 4")
	check(lowAndHigh() == "4-10", "after deleting records below 4: %s", lowAndHigh())

	twoHours := "7200000"
	must(admin.AlterConfig(sarama.TopicResource, topic, map[string]*string{"retention.ms": &twoHours}, false), "alter configs")
	check(configOf("retention.ms") == twoHours, "altered retention.ms reads %s", configOf("retention.ms"))
	compact := "compact"
	must(admin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"cleanup.policy": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &compact}}, false), "incremental alter")
	check(configOf("cleanup.policy") == "compact" && configOf("retention.ms") == twoHours,
		"after the incremental alteration: cleanup.policy %s, retention.ms %s", configOf("cleanup.policy"), configOf("retention.ms"))
	err = admin.DeleteRecords(topic, map[int32]int64{0: 6})
	check(err != nil && strings.Contains(err.Error(), sarama.ErrPolicyViolation.Error()),
		"deleting records of a compact-only topic: %v", err)
	check(lowAndHigh() == "4-10", "after the refused deletion: %s", lowAndHigh())

	must(admin.CreatePartitions(topic, 5, nil, false), "create partitions")
	described, err := admin.DescribeTopics([]string{topic})
	must(err, "describe topics")
	check(len(described[0].Partitions) == 5, "%d partitions, not 5", len(described[0].Partitions))

	groupID := "sarama-admin-" + unique
	offsetManager, err := sarama.NewOffsetManagerFromClient(groupID, client)
	must(err, "offset manager")
	for partition := int32(0); partition < 2; partition++ {
		partitionManager, err := offsetManager.ManagePartition(topic, partition)
		must(err, "manage partition")
		partitionManager.MarkOffset(7, "seven")
		offsetManager.Commit()
		must(partitionManager.Close(), "partition manager close")
	}
	must(offsetManager.Close(), "offset manager close")
	offsets, err := admin.ListConsumerGroupOffsets(groupID, map[string][]int32{topic: {0, 1}})
	must(err, "group offsets")
	block := offsets.Blocks[topic][0]
	check(block.Offset == 7 && block.Metadata == "seven", "committed %d %q, not 7 \"seven\"", block.Offset, block.Metadata)
	// one of the two; the other stays, and the group with it (with none, it would stay Empty until the broker's next cleanup)
	must(admin.DeleteConsumerGroupOffset(groupID, topic, 0), "delete the group's offset")
	offsets, err = admin.ListConsumerGroupOffsets(groupID, map[string][]int32{topic: {0, 1}})
	must(err, "group offsets after deleting one")
	check(offsets.Blocks[topic][0].Offset == -1 && offsets.Blocks[topic][1].Offset == 7,
		"after deleting partition 0's offset: %d and %d", offsets.Blocks[topic][0].Offset, offsets.Blocks[topic][1].Offset)
	must(admin.DeleteConsumerGroup(groupID), "delete group")
	groups, err := admin.ListConsumerGroups()
	must(err, "list groups")
	_, listed := groups[groupID]
	check(!listed, "the deleted group is listed")

	brokers, controller, err := admin.DescribeCluster()
	must(err, "describe cluster")
	check(len(brokers) == 1 && controller >= 0, "describe cluster: %d brokers, controller %d", len(brokers), controller)
	must(admin.DeleteTopic(topic), "delete topic")
	deadline := time.Now().Add(30 * time.Second)
	for {
		topics, err := admin.ListTopics()
		must(err, "list topics")
		if _, present := topics[topic]; !present {
			break
		}
		check(time.Now().Before(deadline), "the deleted topic is still listed")
		time.Sleep(100 * time.Millisecond)
	}
}

// unsecuredToken makes the unsigned JWS the broker's default OAUTHBEARER validator accepts (or, with a negative
// life, refuses as expired).
type unsecuredToken struct{ lifeSeconds int64 }

func (t unsecuredToken) Token() (*sarama.AccessToken, error) {
	now := time.Now().Unix()
	section := func(value map[string]any) string {
		encoded, err := json.Marshal(value)
		must(err, "token section")
		return base64.RawURLEncoding.EncodeToString(encoded)
	}
	claims := map[string]any{"sub": "go-oauth", "iat": now - 600, "exp": now + t.lifeSeconds}
	return &sarama.AccessToken{Token: section(map[string]any{"alg": "none"}) + "." + section(claims) + "."}, nil
}

func saslConfig(mechanism sarama.SASLMechanism, password string, tokens sarama.AccessTokenProvider) *sarama.Config {
	cfg := config(sarama.MaxVersion)
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Version = sarama.SASLHandshakeV1
	cfg.Net.SASL.Mechanism = mechanism
	cfg.Net.SASL.User, cfg.Net.SASL.Password = "alice", password
	cfg.Net.SASL.TokenProvider = tokens
	return cfg
}

// sasl: through the SASL_PLAINTEXT listener (SASL_BOOTSTRAP; PLAIN user alice, OAUTHBEARER with the broker's
// default, unsecured validator), a producer authenticated with PLAIN and one with an unsecured OAUTHBEARER token
// write, a consumer authenticated with the token reads both back; a wrong password and an expired token are refused.
func saslStep() {
	listener := os.Getenv("SASL_BOOTSTRAP")
	check(listener != "", "SASL_BOOTSTRAP is not set: the broker has no SASL listener")
	bootstrap = []string{listener}
	plain := saslConfig(sarama.SASLTypePlaintext, "alice-secret", nil)
	bearer := saslConfig(sarama.SASLTypeOAuth, "", unsecuredToken{600})
	topic := "go-sasl-" + unique
	admin := newAdmin(plain)
	createTopic(admin, topic, 1, nil)
	must(admin.Close(), "close admin")
	for _, send := range []struct {
		cfg   *sarama.Config
		value string
	}{{plain, "by-plain"}, {bearer, "by-token"}} {
		producer, err := sarama.NewSyncProducer(bootstrap, send.cfg)
		must(err, "producer "+send.value)
		_, _, err = producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(send.value)})
		must(err, "send "+send.value)
		must(producer.Close(), "close producer")
	}
	records := readAll(bearer, topic, 2, 30*time.Second)
	check(len(records) == 2 && records[0].value == "by-plain" && records[1].value == "by-token", "read %v", records)
	for _, refused := range []*sarama.Config{saslConfig(sarama.SASLTypePlaintext, "wrong", nil),
		saslConfig(sarama.SASLTypeOAuth, "", unsecuredToken{-120})} {
		refused.Metadata.Retry.Max = 0
		client, err := sarama.NewClient(bootstrap, refused)
		if err == nil {
			client.Close()
		}
		check(err != nil, "%s with bad credentials was not refused", refused.Net.SASL.Mechanism)
	}
}

func main() {
	if len(os.Args) != 3 {
		fmt.Println("usage: scenario BOOTSTRAP STEP")
		os.Exit(2)
	}
	bootstrap = []string{os.Args[1]}
	step := os.Args[2]
	steps := map[string]func(){"producer": producer, "group": group, "transactions": transactions, "admin": admin,
		"sasl": saslStep}
	run, known := steps[step]
	if !known {
		fmt.Printf("FAIL %s: no such step\n", step)
		os.Exit(2)
	}
	defer func() {
		if caught := recover(); caught != nil {
			if f, ok := caught.(failure); ok {
				fmt.Printf("FAIL %s: %s\n", step, f.why)
				os.Exit(1)
			}
			panic(caught)
		}
	}()
	run()
	fmt.Printf("OK %s\n", step)
}
