// kafkajs consumer for the kproxy e2e suite.
//
// Joins with a round-robin assignor registered under the protocol name
// "roundrobin" (kafkajs calls its own "RoundRobinAssigner"), so that it can
// share a group with librdkafka and franz-go clients. After each batch it
// "works" --work-ms, then commits the batch's offsets. One JSON event per line
// on stdout; kafkajs' own log goes to stderr. SIGTERM disconnects cleanly.
'use strict'

const { Kafka, logLevel, PartitionAssigners } = require('kafkajs')

function flags (argv) {
  const out = { 'client-id': 'kafkajs', 'work-ms': '0', 'session-ms': '10000' }
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) throw new Error(`bad flag ${argv[i]}`)
    out[argv[i].slice(2)] = argv[i + 1]
  }
  for (const k of ['bootstrap', 'group', 'topic']) if (!out[k]) throw new Error(`missing --${k}`)
  return out
}

function emit (event, fields) {
  process.stdout.write(JSON.stringify({ event, ms: Date.now(), ...fields }) + '\n')
}

// byTopic turns kafkajs' memberAssignment ({topic: [p...]}) into sorted lists.
function byTopic (assignment) {
  const out = {}
  for (const t of Object.keys(assignment || {}).sort()) out[t] = [...assignment[t]].sort((a, b) => a - b)
  return out
}

const roundrobin = (config) => ({ ...PartitionAssigners.roundRobin(config), name: 'roundrobin' })

async function main () {
  const a = flags(process.argv.slice(2))
  const session = parseInt(a['session-ms'], 10)
  const work = parseInt(a['work-ms'], 10)
  const kafka = new Kafka({
    clientId: a['client-id'],
    brokers: [a.bootstrap],
    logLevel: logLevel.INFO,
    logCreator: () => ({ namespace, level, label, log }) => {
      process.stderr.write(`${new Date().toISOString()} ${label} ${namespace} ${JSON.stringify(log)}\n`)
    }
  })
  // --session-ms 0: kafkajs' defaults (30 s, heartbeats every 3 s).
  const timeouts = session > 0 ? { sessionTimeout: session, heartbeatInterval: Math.max(100, Math.floor(session / 5)) } : {}
  const consumer = kafka.consumer({
    groupId: a.group,
    ...timeouts,
    partitionAssigners: [roundrobin]
  })
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    emit('assigned', {
      partitions: byTopic(e.payload.memberAssignment),
      member_id: e.payload.memberId,
      leader: e.payload.isLeader
    })
  })
  consumer.on(consumer.events.REBALANCING, () => emit('revoked', { partitions: {} }))
  consumer.on(consumer.events.CRASH, (e) => emit('error', { error: String(e.payload.error) }))

  let total = 0
  let stopping = false
  process.on('SIGTERM', async () => {
    if (stopping) return
    stopping = true
    await consumer.disconnect()
    emit('closed', { total })
    process.exit(0)
  })

  await consumer.connect()
  await consumer.subscribe({ topics: [a.topic], fromBeginning: true })
  emit('started', { client_id: a['client-id'] })
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
      if (batch.messages.length === 0) return
      const last = batch.messages[batch.messages.length - 1].offset
      for (const m of batch.messages) resolveOffset(m.offset)
      total += batch.messages.length
      emit('polled', { count: batch.messages.length, total, partitions: { [batch.topic]: [batch.partition] } })
      if (work > 0) await new Promise((resolve) => setTimeout(resolve, work))
      const next = (BigInt(last) + 1n).toString()
      const shown = { [batch.topic]: { [String(batch.partition)]: Number(next) } }
      try {
        await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: next }])
        emit('commit', { offsets: shown, error: '' })
      } catch (e) {
        emit('commit', { offsets: shown, error: String(e) })
      }
      await heartbeat()
    }
  })
}

main().catch((e) => {
  emit('error', { error: String(e && e.stack ? e.stack : e) })
  process.exit(1)
})
