# The two set-up commands: `make serve` and `make test`. Both create .venv when it is missing.
# The interpreter .venv is built on: the fastest CPython 3.11 here (tools/fastest_python.py) unless PYTHON is set.
PYTHON ?=
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test lint bench bench-store bench-wire bench-compare bench-share bench-share-dlq bench-startup bench-soak clean compat-peers compat-franz \
	compat-kafka compat-kafka-fast compat-java compat-clients compat-table kafka fuzz spark-kafka

$(STAMP): pyproject.toml compat/wire/_record_walk.c
	test -d $(VENV) || $(or $(PYTHON),$$(python3 tools/fastest_python.py || echo python3)) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,spark]'
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/logwright serve --data-dir ./data --listen 127.0.0.1:9092

# The suite runs in TEST_WORKERS processes (pytest-xdist): most of its time is spent waiting on broker processes,
# so three workers halve it on two cores. Each module stays on one worker (its module-scoped brokers start once),
# every Spark test on one (one SparkSession): tests/conftest.py. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 3

test: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# Spark's Kafka connector (spark-sql-kafka-0-10) for tests/spark, from Maven Central into an ignored folder
# (tests/spark/kafka_connector/target/lib); the Spark tests fetch it themselves when it is missing and mvn is there.
spark-kafka:
	mvn -q -B -Dstyle.color=never -f tests/spark/kafka_connector/pom.xml dependency:copy-dependencies

# kafka-python's own integration suite against a logwright broker (sdist fetched into peers/.cache).
$(VENV)/.peers-installed: $(STAMP)
	$(BIN)/pip install -q -e '.[test,peers]'
	touch $@

compat-peers: $(VENV)/.peers-installed
	$(BIN)/python peers/kafka_python.py

# franz-go's own pkg/kgo tests against a logwright broker (module fetched into peers/.cache; needs go).
compat-franz: $(STAMP)
	$(BIN)/python peers/franz_go.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python tools/typecheck.py

# Differential mode: the integration scenarios on Apache Kafka 4.x (assembled from Maven Central; needs java 17+
# and mvn). A scenario that fails there encodes a wrong expectation. The fast subset is what CI runs, on three
# workers (each its own Kafka node, files kept whole): the scenarios mostly wait on Kafka's timers, so three take
# about 5 min where two took 6 and one 11.
compat-kafka: $(STAMP)
	$(BIN)/python -m pytest -q tests/integration --against kafka

compat-kafka-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n 3 --dist loadfile tests/integration --against kafka -m differential

# Fuzzing, opt-in (15-20 min): FUZZ_EXAMPLES batches of 6 mutated frames of every served API key and version
# against a broker process (tests/fuzz; `make test` runs 300), HOSTILE_EXAMPLES examples of well-formed requests with
# hostile values and stateful sequences (`make test` runs 250; FUZZ_SEED fixes their seed, random otherwise),
# HOSTILE_TLS_EXAMPLES of hostile bytes on the SSL listener (`make test` runs 40), then
# atheris (coverage-guided, in-process) over the decoding path for FUZZ_RUNS inputs; findings land in .fuzz/. No
# per-test timeout here: 5,000 hostile-value examples take 8-10 min, past the suite's 300 s.
# atheris is installed here, not by `make test`.
FUZZ_EXAMPLES ?= 4000
HOSTILE_EXAMPLES ?= 5000
HOSTILE_TLS_EXAMPLES ?= 1000
FUZZ_RUNS ?= 1000000
fuzz: $(STAMP)
	LOGWRIGHT_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) LOGWRIGHT_HOSTILE_EXAMPLES=$(HOSTILE_EXAMPLES) \
		LOGWRIGHT_HOSTILE_TLS_EXAMPLES=$(HOSTILE_TLS_EXAMPLES) \
		$(if $(FUZZ_SEED),LOGWRIGHT_FUZZ_SEED=$(FUZZ_SEED)) $(BIN)/python -m pytest -q --timeout 0 tests/fuzz -x
	$(BIN)/pip install -q atheris || { echo "atheris did not install: skipping the in-process run"; exit 0; }; \
	mkdir -p .fuzz/corpus && $(BIN)/python tests/fuzz/atheris_decode.py -runs=$(FUZZ_RUNS) -max_len=4096 \
		-artifact_prefix=.fuzz/ .fuzz/corpus

# The Java client scenario (kafka-clients and Kafka Streams, javac), a Kafka Connect worker and Kafka's command-line
# tools against logwright and Apache Kafka in the same run, on three workers (3.2 min where two took 4.1; the
# command-line tools' tests grouped by broker: each broker they share is started once, on one worker).
compat-java: $(STAMP)
	$(BIN)/python -m pytest -q -n 3 --dist loadgroup tests/peers/test_java_client.py tests/peers/test_java_backlog_quota.py \
		tests/peers/test_java_pop_renew.py tests/peers/test_kafka_connect.py tests/peers/test_kafka_tools.py \
		tests/peers/test_kafka_system_tools.py --peers

# KafkaJS (Node, npm ci) and Sarama (Go, from the module proxy) scenarios against logwright and Apache Kafka.
compat-clients: $(STAMP)
	$(BIN)/python -m pytest -q tests/peers/test_js_go_clients.py --peers

# Every peer suite (kafka-python, franz-go, the Java, KafkaJS and Sarama scenarios) against logwright, Apache Kafka and Tansu in one
# session, one run at a time: writes peers/results.md (ran/passed/failed/skipped, logwright failures with reasons).
# Opt-in and heavy (about half an hour); each suite alone takes --against logwright|kafka|tansu.
compat-table: $(VENV)/.peers-installed $(VENV)/.bench-installed
	$(BIN)/python peers/compat_table.py $(TABLE_ARGS)

# An Apache Kafka node on a free loopback port, started and stopped once, with its timings.
kafka: $(STAMP)
	$(BIN)/python bench/kafka_peer.py

# Benchmarks, not tests: the store alone, then produce/consume over the wire beside Tansu (about 2 min).
$(VENV)/.bench-installed: $(STAMP)
	$(BIN)/pip install -q -e '.[test,bench]'
	touch $@

bench: bench-store bench-wire

bench-store: $(STAMP)
	$(BIN)/python bench/eventstore.py

bench-wire: $(VENV)/.bench-installed
	$(BIN)/python bench/produce_consume.py $(BENCH_ARGS)

# Apache Kafka, Tansu and logwright in one session, every workload of bench/compare.py 5 times (3 times, most of
# them: 33 min; needs java 17+ and mvn): bench/results/compare.md and .png. BENCH_ARGS=--quick for the smoke subset
# in under 3 minutes (compare-quick.*), --small for every workload at small sizes (compare-small.*).
bench-compare: $(VENV)/.bench-installed
	$(BIN)/python bench/compare.py $(BENCH_ARGS)

# Share-group consumption (ACCEPT per record) beside Fetch, logwright and Apache Kafka (needs java and mvn; ~3 min).
bench-share: $(VENV)/.bench-installed
	$(BIN)/python bench/share_consume.py $(BENCH_ARGS)

# Share-group consumption with every 10th record nacked to the delivery limit and dead-lettered, beside plain
# share consumption on the same logwright broker: msg/s and event-log bytes per dead-letter (~1 min).
bench-share-dlq: $(VENV)/.bench-installed
	$(BIN)/python bench/share_dead_letter.py $(BENCH_ARGS)

# Issue 16: produce to a dedup-enabled and a compacted topic against a plain one (key-index cost), and compaction
# speed in records/s while a producer loads the broker (~1 min). BENCH_ARGS="--records 20000 --updates 50000".
bench-keys: $(VENV)/.bench-installed
	$(BIN)/python bench/keys.py $(BENCH_ARGS)

# Start-up time and RSS with 1 M records stored, logwright and Apache Kafka (~2 min).
bench-startup: $(VENV)/.bench-installed
	$(BIN)/python bench/startup.py $(BENCH_ARGS)

# 200 connections producing and consuming for 10 minutes with share groups and commits: RSS, fds, tasks and
# p99 latency over time, zero errors; writes bench/results/soak.md. BENCH_ARGS="--duration 60 --connections 40".
bench-soak: $(VENV)/.bench-installed
	$(BIN)/python bench/soak.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
