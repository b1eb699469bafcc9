package dev.kproxy.e2e;

import static dev.kproxy.e2e.Client.emit;
import static dev.kproxy.e2e.Client.need;
import static dev.kproxy.e2e.Client.security;
import static dev.kproxy.e2e.Client.str;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * EOSApp is scenario 29's workload: a consume-transform-produce application
 * with exactly-once semantics, as the Kafka documentation writes one. A
 * read_committed consumer in a group (classic protocol, range assignor:
 * eager, every partition revoked at the start of a rebalance) and a
 * transactional producer; the consumer's offsets are committed in the
 * producer's transaction (sendOffsetsToTransaction with the consumer's group
 * metadata, KIP-447).
 *
 * <pre>
 * eos --bootstrap B --group G --in T --out O --transactional-id ID
 *     [--on-revoke commit|abort] [--run-s N] [--client-id C] [--protocol classic|consumer]
 * </pre>
 *
 * With --protocol consumer the group uses KIP-848's protocol
 * (group.protocol=consumer, the broker's assignor): only the partitions
 * that move are revoked, and the group metadata sent with the offsets
 * carries the member epoch.
 *
 * It keeps one transaction open across polls, for as long as records come:
 * each record read is written to O, upper-cased, and its offset joins the
 * transaction's pending offsets. A transaction ends only when partitions are
 * revoked and when the run ends after --run-s seconds: it then sends its
 * offsets (sendOffsetsToTransaction) and commits it, or, when partitions are
 * revoked with --on-revoke abort, aborts it after sending them, as an
 * application does whose output failed after its offsets were sent. So a
 * rebalance always finds a transaction open once records were read, and its
 * offsets are sent during the revocation.
 *
 * Events: "assigned" and "revoked" (partitions), "processed" (count in this
 * poll, total so far), "txn" (result committed or aborted; state revocation
 * or end; the offsets the transaction committed or would have; member_id and
 * generation of the group metadata sent with them), "closed".
 */
final class EOSApp {
  private EOSApp() {}

  static void run(Map<String, String> a) throws Exception {
    String in = need(a, "in");
    String out = need(a, "out");
    boolean commitOnRevoke = !"abort".equals(a.getOrDefault("on-revoke", "commit"));
    long deadline = System.currentTimeMillis() + 1000L * Long.parseLong(a.getOrDefault("run-s", "60"));
    String clientID = a.getOrDefault("client-id", "java-eos");

    Properties cp = new Properties();
    cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, need(a, "bootstrap"));
    security(cp);
    cp.put(ConsumerConfig.GROUP_ID_CONFIG, need(a, "group"));
    cp.put(ConsumerConfig.CLIENT_ID_CONFIG, clientID);
    cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    switch (a.getOrDefault("protocol", "classic")) {
      case "classic" -> cp.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName());
      case "consumer" -> cp.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
      default -> throw new IllegalArgumentException("--protocol: classic or consumer, not " + a.get("protocol"));
    }
    cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());

    Properties pp = new Properties();
    pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, need(a, "bootstrap"));
    security(pp);
    pp.put(ProducerConfig.CLIENT_ID_CONFIG, clientID + "-producer");
    pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, need(a, "transactional-id"));
    pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    pp.put(ProducerConfig.ACKS_CONFIG, "all");
    pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());

    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp);
        KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
      p.initTransactions();
      Txn txn = new Txn(c, p);
      c.subscribe(List.of(in), new ConsumerRebalanceListener() {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> parts) {
          // The transaction still open is ended here, while the partitions
          // are ours: its offsets are committed with it, or not at all.
          txn.end(commitOnRevoke, "revocation");
          emit("revoked", "partitions", Client.parts(parts));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> parts) {
          emit("assigned", "partitions", Client.parts(parts), "owned", Client.parts(c.assignment()));
        }
      });
      emit("started", "client_id", str(clientID));
      long total = 0;
      while (System.currentTimeMillis() < deadline) {
        ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
        if (recs.isEmpty()) {
          continue;
        }
        txn.begin();
        for (ConsumerRecord<String, String> r : recs) {
          p.send(new ProducerRecord<>(out, r.key(), r.value().toUpperCase()));
          txn.pending.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
        }
        total += recs.count();
        emit("processed", "count", String.valueOf(recs.count()), "total", String.valueOf(total));
      }
      txn.end(true, "end");
      emit("closed", "client_id", str(clientID), "member_id", str(c.groupMetadata().memberId()));
    } catch (Exception e) {
      emit("error", "error", str(e.toString()));
      throw e;
    }
  }

  /** Txn is the producer's open transaction and the offsets it will commit. */
  private static final class Txn {
    final KafkaConsumer<String, String> c;
    final KafkaProducer<String, String> p;
    final Map<TopicPartition, OffsetAndMetadata> pending = new HashMap<>();
    boolean open;

    Txn(KafkaConsumer<String, String> c, KafkaProducer<String, String> p) {
      this.c = c;
      this.p = p;
    }

    void begin() {
      if (!open) {
        p.beginTransaction();
        open = true;
      }
    }

    /** end commits the open transaction with its offsets, or aborts it. */
    void end(boolean commit, String why) {
      if (!open) {
        return;
      }
      ConsumerGroupMetadata md = c.groupMetadata();
      p.sendOffsetsToTransaction(pending, md);
      if (commit) {
        p.commitTransaction();
      } else {
        p.abortTransaction();
      }
      emit("txn", "result", str(commit ? "committed" : "aborted"), "state", str(why),
          "offsets", Client.offsets(pending), "member_id", str(md.memberId()),
          "generation", String.valueOf(md.generationId()));
      pending.clear();
      open = false;
    }
  }
}
