package dev.kproxy.e2e;

import static dev.kproxy.e2e.Client.emit;
import static dev.kproxy.e2e.Client.need;
import static dev.kproxy.e2e.Client.security;
import static dev.kproxy.e2e.Client.str;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Transactional is scenario 26's workload: a transactional producer configured
 * as production configures one (transactional.id, idempotence, acks=all), and
 * a read_committed consumer in a group.
 *
 * <pre>
 * txn-produce --bootstrap B --topic T --transactional-id ID --transactions N --records M
 *             [--abort I,J] [--client-id C]
 * txn-read    --bootstrap B --topic T --group G [--client-id C] [--timeout-s N]
 * </pre>
 *
 * txn-produce runs N transactions of M records each (record i of the run has
 * key "k" + i), aborting the transactions numbered in --abort (from 0) after
 * flushing them, so that their records are in the log; it prints a "record"
 * event for every record it wrote (txn, partition, offset, key, value) once
 * its transaction is over, a "txn" event per transaction (result committed or
 * aborted), and "produced". Any failure is printed as an "error" event and
 * ends the process with status 1.
 *
 * txn-read subscribes with isolation.level=read_committed and reads every
 * partition up to its end (the offset after the last record or marker, asked
 * with read_uncommitted: a read_committed consumer moves past the markers),
 * printing a "record" event per record and "read" at the end.
 */
final class Transactional {
  private Transactional() {}

  static void produce(Map<String, String> a) throws Exception {
    String topic = need(a, "topic");
    int txns = Integer.parseInt(need(a, "transactions"));
    int per = Integer.parseInt(need(a, "records"));
    Set<Integer> abort = new HashSet<>();
    for (String s : a.getOrDefault("abort", "").split(",")) {
      if (!s.isEmpty()) {
        abort.add(Integer.parseInt(s));
      }
    }
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, need(a, "bootstrap"));
    security(p);
    p.put(ProducerConfig.CLIENT_ID_CONFIG, a.getOrDefault("client-id", "java-txn-producer"));
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, need(a, "transactional-id"));
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    long committed = 0;
    long aborted = 0;
    try (KafkaProducer<String, String> pr = new KafkaProducer<>(p)) {
      emit("started", "client_id", str(p.getProperty(ProducerConfig.CLIENT_ID_CONFIG)));
      pr.initTransactions();
      for (int t = 0; t < txns; t++) {
        pr.beginTransaction();
        List<ProducerRecord<String, String>> sent = new ArrayList<>();
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        for (int j = 0; j < per; j++) {
          long i = (long) t * per + j;
          ProducerRecord<String, String> r = new ProducerRecord<>(topic, "k" + i,
              "txn-" + t + "-" + new String(Client.payload(i), StandardCharsets.UTF_8));
          sent.add(r);
          acks.add(pr.send(r));
        }
        // Every record is written before the transaction ends, the aborted
        // ones too: the log holds them, and only the marker hides them.
        pr.flush();
        List<RecordMetadata> mds = new ArrayList<>();
        for (Future<RecordMetadata> f : acks) {
          mds.add(f.get());
        }
        boolean abortIt = abort.contains(t);
        if (abortIt) {
          pr.abortTransaction();
          aborted += per;
        } else {
          pr.commitTransaction();
          committed += per;
        }
        for (int j = 0; j < per; j++) {
          emit("record", "txn", String.valueOf(t), "partition", String.valueOf(mds.get(j).partition()),
              "offset", String.valueOf(mds.get(j).offset()), "key", str(sent.get(j).key()),
              "value", str(sent.get(j).value()));
        }
        emit("txn", "txn", String.valueOf(t), "result", str(abortIt ? "aborted" : "committed"));
      }
    } catch (Exception e) {
      emit("error", "error", str(e.toString()));
      throw e;
    }
    emit("produced", "count", String.valueOf(committed), "aborted", String.valueOf(aborted));
  }

  static void read(Map<String, String> a) throws Exception {
    String topic = need(a, "topic");
    String bootstrap = need(a, "bootstrap");
    long deadline = System.currentTimeMillis() + 1000L * Long.parseLong(a.getOrDefault("timeout-s", "60"));
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    security(p);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, need(a, "group"));
    p.put(ConsumerConfig.CLIENT_ID_CONFIG, a.getOrDefault("client-id", "java-txn-reader"));
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    Properties ap = new Properties();
    ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    security(ap);
    ap.put(AdminClientConfig.CLIENT_ID_CONFIG, p.getProperty(ConsumerConfig.CLIENT_ID_CONFIG) + "-admin");
    long count = 0;
    boolean complete = false;
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p); Admin adm = Admin.create(ap)) {
      c.subscribe(List.of(topic));
      emit("started", "client_id", str(p.getProperty(ConsumerConfig.CLIENT_ID_CONFIG)));
      Map<TopicPartition, Long> end = null;
      while (System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
          count++;
          emit("record", "partition", String.valueOf(r.partition()), "offset", String.valueOf(r.offset()),
              "key", str(r.key()), "value", str(r.value()));
        }
        List<PartitionInfo> info = c.partitionsFor(topic);
        if (c.assignment().size() < info.size()) {
          continue;
        }
        if (end == null) {
          Map<TopicPartition, OffsetSpec> q = new HashMap<>();
          c.assignment().forEach(tp -> q.put(tp, OffsetSpec.latest()));
          end = new HashMap<>();
          for (var e : adm.listOffsets(q, new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED)).all().get()
              .entrySet()) {
            end.put(e.getKey(), e.getValue().offset());
          }
        }
        boolean done = true;
        for (var e : end.entrySet()) {
          done &= c.position(e.getKey()) >= e.getValue();
        }
        if (done) {
          complete = true;
          break;
        }
      }
      c.commitSync();
    } catch (Exception e) {
      emit("error", "error", str(e.toString()));
      throw e;
    }
    emit("read", "count", String.valueOf(count), "complete", String.valueOf(complete));
  }
}
