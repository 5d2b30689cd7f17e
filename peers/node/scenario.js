// The KafkaJS scenario: one step per run, against the broker at argv[2]; prints "OK <step>" or "FAIL <why>".
//
// KafkaJS (pure JavaScript, its own protocol code and its own API versions, gzip only built in) is the Node client
// most applications use. peers/node_client.py runs every step against logwright or Apache Kafka; the checks are the
// same for both. Each step makes its own topics and groups, so the steps share nothing but the broker.
'use strict'

const { Kafka, CompressionTypes, logLevel } = require('kafkajs')

const [bootstrap, step] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'logwright-node-scenario', brokers: [bootstrap], logLevel: logLevel.NOTHING,
                          retry: { retries: 8 } })
const unique = `${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`

function check (condition, why) {
  if (!condition) throw new Error(why)
}

async function createTopic (admin, topic, numPartitions, configEntries = []) {
  check(await admin.createTopics({ topics: [{ topic, numPartitions, configEntries }], waitForLeaders: true }),
    `topic ${topic} was not created`)
}

// Consumes until `count` messages arrived or `timeoutMs` passed; returns them as {partition, offset, key, value,
// headers}; the consumer is stopped, not disconnected.
async function consume (consumer, count, timeoutMs = 30000) {
  const seen = []
  let done
  const finished = new Promise((resolve) => { done = resolve })
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      seen.push({ partition, offset: Number(message.offset), key: message.key && message.key.toString(),
                  value: message.value && message.value.toString(), headers: message.headers })
      if (seen.length >= count) done()
    }
  })
  const timer = setTimeout(done, timeoutMs)
  await finished
  clearTimeout(timer)
  await consumer.stop()
  return seen
}

async function endOffsets (admin, topic) {
  return (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0)
}

// An idempotent producer sends keyed, gzip-compressed batches with headers; a consumer reads every record back:
// each key on one partition, in the order sent, headers intact.
async function producer () {
  const admin = kafka.admin()
  await admin.connect()
  const topic = `node-produce-${unique}`
  await createTopic(admin, topic, 3)
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  for (let batch = 0; batch < 10; batch++) {
    const messages = []
    for (let key = 0; key < 30; key++) {
      messages.push({ key: `k${key}`, value: `${key}:${batch}`, headers: { batch: `${batch}`, kind: 'scenario' } })
    }
    const answers = await producer.send({ topic, compression: CompressionTypes.GZIP, acks: -1, messages })
    check(answers.every((answer) => answer.errorCode === 0), `a send was refused: ${JSON.stringify(answers)}`)
  }
  await producer.disconnect()
  check(await endOffsets(admin, topic) === 300, 'the end offsets do not add up to the 300 records sent')
  const consumer = kafka.consumer({ groupId: `node-produce-${unique}` })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const seen = await consume(consumer, 300)
  await consumer.disconnect()
  await admin.disconnect()
  check(seen.length === 300, `read ${seen.length} of 300 records`)
  const byKey = new Map()
  for (const record of seen) {
    const [key, batch] = record.value.split(':')
    check(record.key === `k${key}`, `record ${record.value} came back with key ${record.key}`)
    check(record.headers.batch.toString() === batch && record.headers.kind.toString() === 'scenario',
      `record ${record.value} lost its headers`)
    const previous = byKey.get(record.key)
    if (previous) {
      check(previous.partition === record.partition, `key ${record.key} is on two partitions`)
      check(Number(previous.batch) + 1 === Number(batch), `key ${record.key}: batch ${batch} after ${previous.batch}`)
    }
    byKey.set(record.key, { partition: record.partition, batch })
  }
  check(byKey.size === 30, `${byKey.size} keys of 30`)
}

// Two members share a 4-partition topic after a rebalance, commit as they go; a third member of the same group,
// started after both left, reads only what was produced since (the committed offsets), and the group's offsets
// read through the admin client are the topic's end.
async function group () {
  const admin = kafka.admin()
  await admin.connect()
  const topic = `node-group-${unique}`
  const groupId = `node-group-${unique}`
  await createTopic(admin, topic, 4)
  const producer = kafka.producer()
  await producer.connect()
  const send = async (from, to) => {
    const messages = []
    for (let i = from; i < to; i++) messages.push({ key: `${i}`, value: `${i}` })
    await producer.send({ topic, messages })
  }
  await send(0, 100)
  const assigned = new Map()
  const values = new Set()
  let duplicates = 0
  const member = async (name) => {
    const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 })
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      assigned.set(name, (payload.memberAssignment[topic] || []).length)
    })
    await consumer.connect()
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    await consumer.run({
      eachMessage: async ({ message }) => {
        const value = message.value.toString()
        if (values.has(value)) duplicates++
        values.add(value)
      }
    })
    return consumer
  }
  const waitFor = async (condition, why, timeoutMs = 30000) => {
    const deadline = Date.now() + timeoutMs
    while (!condition()) {
      check(Date.now() < deadline, why())
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const first = await member('first')
  await waitFor(() => values.size === 100, () => `the first member read ${values.size} of 100`)
  const second = await member('second')
  await waitFor(() => assigned.get('second') > 0 && assigned.get('first') > 0 &&
                      assigned.get('first') + assigned.get('second') === 4,
  () => `the partitions were not shared: ${JSON.stringify([...assigned])}`)
  await send(100, 200)
  await waitFor(() => values.size === 200, () => `the two members read ${values.size} of 200`)
  await first.disconnect()
  await second.disconnect()
  check(duplicates <= 100, `${duplicates} records read twice`)
  const committed = await admin.fetchOffsets({ groupId, topics: [topic] })
  const sum = committed[0].partitions.reduce((total, p) => total + Number(p.offset), 0)
  check(sum === 200, `the group committed up to ${sum}, not the 200 read`)
  const described = (await admin.describeGroups([groupId])).groups[0]
  check(described.state === 'Empty' && described.protocolType === 'consumer',
    `the group after both left: ${described.state} ${described.protocolType}`)
  await send(200, 210)
  const third = kafka.consumer({ groupId })
  await third.connect()
  await third.subscribe({ topics: [topic], fromBeginning: true })
  const resumed = await consume(third, 10)
  await new Promise((resolve) => setTimeout(resolve, 1000))
  await third.disconnect()
  const resumedValues = resumed.map((record) => Number(record.value)).sort((a, b) => a - b)
  check(JSON.stringify(resumedValues) === JSON.stringify([...Array(10).keys()].map((i) => i + 200)),
    `resuming from the commits read ${JSON.stringify(resumedValues)}`)
  check((await admin.listGroups()).groups.some((listed) => listed.groupId === groupId), 'the group is not listed')
  await producer.disconnect()
  await admin.disconnect()
}

// Consume-transform-produce in transactions (the input's offsets committed with sendOffsets), an aborted
// transaction that a read_committed consumer never sees and a read_uncommitted one does, and a zombie fenced by a
// second producer with the same transactional id.
async function transactions () {
  const admin = kafka.admin()
  await admin.connect()
  const input = `node-tx-in-${unique}`
  const output = `node-tx-out-${unique}`
  const groupId = `node-tx-${unique}`
  await createTopic(admin, input, 1)
  await createTopic(admin, output, 2)
  const plain = kafka.producer()
  await plain.connect()
  await plain.send({ topic: input, messages: [...Array(20).keys()].map((i) => ({ value: `${i}` })) })
  await plain.disconnect()

  const transactionalId = `node-tx-${unique}`
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const reader = kafka.consumer({ groupId })
  await reader.connect()
  await reader.subscribe({ topics: [input], fromBeginning: true })
  let transformed = 0
  let done
  const finished = new Promise((resolve) => { done = resolve })
  await reader.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      const transaction = await producer.transaction()
      try {
        await transaction.send({ topic: output, messages: batch.messages.map((m) => ({ key: m.value, value: `x${m.value}` })) })
        await transaction.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: input, partitions: [
          { partition: batch.partition, offset: `${Number(batch.lastOffset()) + 1}` }] }] })
        await transaction.commit()
      } catch (error) {
        await transaction.abort()
        throw error
      }
      transformed += batch.messages.length
      if (transformed >= 20) done()
    }
  })
  const timer = setTimeout(done, 30000)
  await finished
  clearTimeout(timer)
  await reader.disconnect()
  check(transformed === 20, `transformed ${transformed} of 20`)

  const aborted = await producer.transaction()
  await aborted.send({ topic: output, messages: [{ key: 'a', value: 'aborted-1' }, { key: 'b', value: 'aborted-2' }] })
  await aborted.abort()

  const committedOffsets = await admin.fetchOffsets({ groupId, topics: [input] })
  check(Number(committedOffsets[0].partitions[0].offset) === 20,
    `the transactions committed the input at ${committedOffsets[0].partitions[0].offset}, not 20`)

  const readCommitted = kafka.consumer({ groupId: `${groupId}-committed` })
  await readCommitted.connect()
  await readCommitted.subscribe({ topics: [output], fromBeginning: true })
  const committed = await consume(readCommitted, 21, 3000)
  await readCommitted.disconnect()
  const committedValues = committed.map((record) => record.value)
  check(committed.length === 20 && committedValues.every((value) => value.startsWith('x')),
    `read_committed read ${JSON.stringify(committedValues)}`)

  const readUncommitted = kafka.consumer({ groupId: `${groupId}-uncommitted`, readUncommitted: true })
  await readUncommitted.connect()
  await readUncommitted.subscribe({ topics: [output], fromBeginning: true })
  const everything = await consume(readUncommitted, 22)
  await readUncommitted.disconnect()
  check(everything.length === 22 && everything.some((record) => record.value === 'aborted-2'),
    `read_uncommitted read ${everything.length} records, not the 20 committed and the 2 aborted`)

  const successor = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 })
  await successor.connect()
  const transaction = await successor.transaction() // KafkaJS asks for the transactional id's epoch here
  let fenced = null
  try {
    const zombie = await producer.transaction()
    await zombie.send({ topic: output, messages: [{ value: 'zombie' }] })
    await zombie.commit()
  } catch (error) {
    fenced = error.type || error.name
  }
  check(fenced === 'PRODUCER_FENCED' || fenced === 'INVALID_PRODUCER_EPOCH',
    `the zombie was not fenced (${fenced})`)
  await transaction.send({ topic: output, messages: [{ value: 'successor' }] })
  await transaction.commit()
  await successor.disconnect()
  const afterFencing = kafka.consumer({ groupId: `${groupId}-after` })
  await afterFencing.connect()
  await afterFencing.subscribe({ topics: [output], fromBeginning: true })
  const last = (await consume(afterFencing, 22, 3000)).map((record) => record.value)
  await afterFencing.disconnect()
  check(last.length === 21 && last.includes('successor') && !last.includes('zombie'),
    `read_committed after the fencing read ${JSON.stringify(last)}`)
  await producer.disconnect().catch(() => {})
  await admin.disconnect()
}

// The admin client: topic configs at creation, described and altered; records deleted below an offset, and refused
// (POLICY_VIOLATION) once the topic is compact-only; more partitions; a group's offsets set while it is empty (and
// KafkaJS's "earliest" reset, which commits the -2 sentinel as it is), a consumer resuming from them, the group
// deleted; the topic deleted.
async function adminStep () {
  const admin = kafka.admin()
  await admin.connect()
  const topic = `node-admin-${unique}`
  await createTopic(admin, topic, 2, [{ name: 'retention.ms', value: '3600000' }])
  await admin.fetchTopicMetadata({ topics: [topic] }) // KafkaJS's admin finds partition leaders in its metadata
  const configOf = async (name) => {
    const described = await admin.describeConfigs({ resources: [{ type: 2, name: topic, configNames: [name] }],
                                                     includeSynonyms: false })
    return described.resources[0].configEntries.find((entry) => entry.configName === name).configValue
  }
  check(await configOf('retention.ms') === '3600000', 'retention.ms set at creation does not read back')

  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic, messages: [...Array(10).keys()].map((i) => ({ key: `k${i}`, value: `${i}`, partition: 0 })) })
  await producer.disconnect()
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '4' }] })
  const lowAndHigh = async () => {
    const partition0 = (await admin.fetchTopicOffsets(topic)).find((p) => p.partition === 0)
    return `${partition0.low}-${partition0.high}`
  }
  check(await lowAndHigh() === '4-10', `after deleting records below 4: ${await lowAndHigh()}`)

  await admin.alterConfigs({ validateOnly: false, resources: [{ type: 2, name: topic, configEntries: [
    { name: 'retention.ms', value: '7200000' }, { name: 'cleanup.policy', value: 'compact' }] }] })
  check(await configOf('retention.ms') === '7200000' && await configOf('cleanup.policy') === 'compact',
    'altered configs do not read back')
  let refusal = null
  try {
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '6' }] })
  } catch (error) {
    const partitions = (error.cause || error).partitions // KafkaJS's retrier wraps what it does not retry
    refusal = partitions && partitions[0].error.type
  }
  check(refusal === 'POLICY_VIOLATION', `deleting records of a compact-only topic: ${refusal}`)
  check(await lowAndHigh() === '4-10', `after the refused deletion: ${await lowAndHigh()}`)

  await admin.createPartitions({ topicPartitions: [{ topic, count: 5 }] })
  const metadata = await admin.fetchTopicMetadata({ topics: [topic] })
  check(metadata.topics[0].partitions.length === 5, `${metadata.topics[0].partitions.length} partitions, not 5`)

  const groupId = `node-admin-${unique}`
  const committedAt = async () => {
    const offsets = await admin.fetchOffsets({ groupId, topics: [topic] })
    return offsets[0].partitions.find((p) => p.partition === 0).offset
  }
  await admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: '7' }] })
  check(await committedAt() === '7', `setOffsets committed ${await committedAt()}, not 7`)
  await admin.resetOffsets({ groupId, topic, earliest: true })
  check(await committedAt() === '-2', `resetOffsets(earliest) committed ${await committedAt()}, not KafkaJS's -2`)
  await admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: '5' }] })
  const consumer = kafka.consumer({ groupId })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic] })
  const resumed = await consume(consumer, 5)
  await consumer.disconnect()
  check(resumed.length === 5 && resumed[0].offset === 5, `resumed at ${resumed.length && resumed[0].offset}`)
  check(await committedAt() === '10', `the consumer committed ${await committedAt()}, not 10`)
  check((await admin.describeGroups([groupId])).groups[0].state === 'Empty', 'the group is not empty after it left')
  await admin.deleteGroups([groupId])
  check(!(await admin.listGroups()).groups.some((listed) => listed.groupId === groupId), 'the deleted group is listed')

  await admin.deleteTopics({ topics: [topic] })
  check(!(await admin.listTopics()).includes(topic), 'the deleted topic is listed')
  const cluster = await admin.describeCluster()
  check(cluster.brokers.length === 1 && cluster.controller !== null, `describeCluster: ${JSON.stringify(cluster)}`)
  await admin.disconnect()
}

// Through the SASL_PLAINTEXT listener (SASL_BOOTSTRAP; PLAIN user alice, OAUTHBEARER with the broker's default,
// unsecured validator): a producer authenticated with PLAIN and one with an unsecured OAUTHBEARER token write, a
// consumer authenticated with the token reads both records back; a wrong password and an expired token are refused.
async function sasl () {
  const saslBootstrap = process.env.SASL_BOOTSTRAP
  check(saslBootstrap, 'SASL_BOOTSTRAP is not set: the broker has no SASL listener')
  const section = (value) => Buffer.from(JSON.stringify(value)).toString('base64url')
  const token = (lifeSeconds) => {
    const now = Math.floor(Date.now() / 1000)
    return `${section({ alg: 'none' })}.${section({ sub: 'node-oauth', iat: now - 600, exp: now + lifeSeconds })}.`
  }
  const client = (mechanism) => new Kafka({ clientId: 'logwright-node-sasl', brokers: [saslBootstrap],
    logLevel: logLevel.NOTHING, retry: { retries: 2 }, sasl: mechanism })
  const plain = { mechanism: 'plain', username: 'alice', password: 'alice-secret' }
  const bearer = (lifeSeconds) => ({ mechanism: 'oauthbearer',
                                     oauthBearerProvider: async () => ({ value: token(lifeSeconds) }) })
  // first: once a PLAIN client of this process has authenticated, KafkaJS 2.2.4 authenticates later PLAIN clients
  // with its credentials whatever theirs are (on Apache Kafka too). KafkaJS takes the broker's OAUTHBEARER error
  // challenge for success, so the expired token's refusal shows at its first request.
  for (const refused of [{ ...plain, password: 'wrong' }, bearer(-120)]) {
    const producer = client(refused).producer()
    let failed = null
    try {
      await producer.connect()
      await producer.send({ topic: `node-sasl-refused-${unique}`, messages: [{ value: 'never' }] })
    } catch (error) {
      failed = error
    }
    check(failed, `${refused.mechanism} with bad credentials was not refused`)
    check(refused.mechanism !== 'plain' || /SASL PLAIN authentication failed/.test(failed.message),
      `plain with a wrong password: ${failed.message}`)
    await producer.disconnect().catch(() => {})
  }
  const topic = `node-sasl-${unique}`
  const admin = client(plain).admin()
  await admin.connect()
  await createTopic(admin, topic, 1)
  await admin.disconnect()
  for (const [mechanism, value] of [[plain, 'by-plain'], [bearer(600), 'by-token']]) {
    const producer = client(mechanism).producer()
    await producer.connect()
    await producer.send({ topic, acks: -1, messages: [{ value }] })
    await producer.disconnect()
  }
  const consumer = client(bearer(600)).consumer({ groupId: `node-sasl-${unique}` })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const seen = await consume(consumer, 2)
  await consumer.disconnect()
  check(seen.map((message) => message.value).join(',') === 'by-plain,by-token', `read ${JSON.stringify(seen)}`)
}

const STEPS = { producer, group, transactions, admin: adminStep, sasl }

async function main () {
  if (!STEPS[step]) throw new Error(`no step ${step}; steps: ${Object.keys(STEPS).join(', ')}`)
  await STEPS[step]()
  console.log(`OK ${step}`)
}

main().then(() => process.exit(0), (error) => {
  console.log(`FAIL ${step}: ${error.message}`)
  console.error(error.stack)
  process.exit(1)
})
