package dev.kproxy.e2e;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Client is the Java e2e client: a consumer in one of several group modes, a
 * producer of distinct records, and a reader that checks them. It prints one
 * JSON object per line on stdout for the suite to follow (see Events below);
 * the Kafka client's own log goes to stderr.
 *
 * <pre>
 * consume --bootstrap B --group G --topic T [--client-id C] [--work-ms N]
 *         [--mode range|cooperative|consumer|static] [--instance-id I]
 *         [--session-ms N|0] [--max-poll-records N|0] [--commit revoke|batch]
 *         [--max-poll-interval-ms N]
 * produce --bootstrap B --topic T --count N [--every-ms MS]
 * read    --bootstrap B --group G --topic T --expect N [--timeout-s N]
 * txn-produce, txn-read   (Transactional: a transactional producer, a read_committed consumer)
 * streams                 (StreamsApp: a Kafka Streams application, exactly_once_v2)
 * share                   (ShareMember: a KafkaShareConsumer in a share group)
 * eos                     (EOSApp: a consume-transform-produce exactly-once application)
 * </pre>
 *
 * SIGTERM closes a consumer cleanly (its revocation listener runs); SIGKILL is
 * what a test uses to make a member vanish.
 */
public final class Client {
  private static final Object OUT = new Object();

  public static void main(String[] argv) throws Exception {
    if (argv.length == 0) {
      throw new IllegalArgumentException("usage: consume|produce|read --bootstrap B ...");
    }
    Map<String, String> a = flags(argv);
    switch (argv[0]) {
      case "consume" -> consume(a);
      case "produce" -> produce(a);
      case "read" -> read(a);
      case "txn-produce" -> Transactional.produce(a);
      case "txn-read" -> Transactional.read(a);
      case "eos" -> EOSApp.run(a);
      case "streams" -> StreamsApp.run(a);
      case "share" -> ShareMember.run(a);
      default -> throw new IllegalArgumentException("unknown command " + argv[0]);
    }
  }

  static Map<String, String> flags(String[] argv) {
    Map<String, String> m = new HashMap<>();
    for (int i = 1; i < argv.length; i++) {
      if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
        throw new IllegalArgumentException("bad flag " + argv[i]);
      }
      m.put(argv[i].substring(2), argv[++i]);
    }
    return m;
  }

  static String need(Map<String, String> a, String k) {
    String v = a.get(k);
    if (v == null) {
      throw new IllegalArgumentException("missing --" + k);
    }
    return v;
  }

  // ---- events ----

  /** emit prints one event line: {"event":name, "ms":epoch ms, ...fields}. */
  static void emit(String name, String... kv) {
    StringBuilder b = new StringBuilder("{\"event\":").append(str(name));
    b.append(",\"ms\":").append(System.currentTimeMillis());
    for (int i = 0; i + 1 < kv.length; i += 2) {
      b.append(',').append(str(kv[i])).append(':').append(kv[i + 1]);
    }
    b.append('}');
    synchronized (OUT) {
      System.out.println(b);
      System.out.flush();
    }
  }

  static String str(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }

  /** parts renders partitions as {"topic":[p,...]}, sorted. */
  static String parts(Collection<TopicPartition> tps) {
    Map<String, List<Integer>> m = new TreeMap<>();
    for (TopicPartition tp : tps) {
      m.computeIfAbsent(tp.topic(), k -> new ArrayList<>()).add(tp.partition());
    }
    StringBuilder b = new StringBuilder("{");
    for (Map.Entry<String, List<Integer>> e : m.entrySet()) {
      e.getValue().sort(null);
      if (b.length() > 1) {
        b.append(',');
      }
      b.append(str(e.getKey())).append(':').append(e.getValue());
    }
    return b.append('}').toString().replace(" ", "");
  }

  /** offsets renders {"topic":{"p":offset}}. */
  static String offsets(Map<TopicPartition, OffsetAndMetadata> m) {
    Map<String, Map<Integer, Long>> t = new TreeMap<>();
    m.forEach((tp, om) -> t.computeIfAbsent(tp.topic(), k -> new TreeMap<>()).put(tp.partition(), om.offset()));
    StringBuilder b = new StringBuilder("{");
    for (Map.Entry<String, Map<Integer, Long>> e : t.entrySet()) {
      if (b.length() > 1) {
        b.append(',');
      }
      b.append(str(e.getKey())).append(":{");
      boolean first = true;
      for (Map.Entry<Integer, Long> p : e.getValue().entrySet()) {
        if (!first) {
          b.append(',');
        }
        first = false;
        b.append('"').append(p.getKey()).append("\":").append(p.getValue());
      }
      b.append('}');
    }
    return b.append('}').toString();
  }

  // ---- security ----

  /**
   * security adds the client's TLS and SASL settings from the environment the
   * harness sets: E2E_SECURITY_PROTOCOL (PLAINTEXT when unset, SSL, SASL_SSL),
   * E2E_SSL_CA (PEM file of the CA to trust), E2E_SASL_MECHANISM (PLAIN,
   * SCRAM-SHA-256), E2E_SASL_USERNAME, E2E_SASL_PASSWORD.
   */
  static void security(Properties p) {
    String protocol = System.getenv().getOrDefault("E2E_SECURITY_PROTOCOL", "PLAINTEXT");
    p.put("security.protocol", protocol);
    String ca = System.getenv("E2E_SSL_CA");
    if (ca != null && !ca.isEmpty()) {
      p.put("ssl.truststore.type", "PEM");
      p.put("ssl.truststore.location", ca);
    }
    String mech = System.getenv("E2E_SASL_MECHANISM");
    if (mech != null && !mech.isEmpty()) {
      String module = mech.equals("PLAIN")
          ? "org.apache.kafka.common.security.plain.PlainLoginModule"
          : "org.apache.kafka.common.security.scram.ScramLoginModule";
      p.put("sasl.mechanism", mech);
      p.put("sasl.jaas.config", module + " required username=\"" + System.getenv("E2E_SASL_USERNAME")
          + "\" password=\"" + System.getenv("E2E_SASL_PASSWORD") + "\";");
    }
  }

  /** reauthentications is how many KIP-368 re-authentications c made. */
  private static long reauthentications(KafkaConsumer<?, ?> c) {
    double n = 0;
    for (var e : c.metrics().entrySet()) {
      if (e.getKey().name().equals("successful-reauthentication-total")) {
        Object v = e.getValue().metricValue();
        if (v instanceof Double d) {
          n += d;
        }
      }
    }
    return (long) n;
  }

  // ---- consume ----

  private static void consume(Map<String, String> a) throws Exception {
    String topic = need(a, "topic");
    String mode = a.getOrDefault("mode", "range");
    long workMs = Long.parseLong(a.getOrDefault("work-ms", "0"));
    String commit = a.getOrDefault("commit", "revoke");
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, need(a, "bootstrap"));
    security(p);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, need(a, "group"));
    p.put(ConsumerConfig.CLIENT_ID_CONFIG, a.getOrDefault("client-id", "java-consumer"));
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    // "0": the client's default (500).
    if (!a.getOrDefault("max-poll-records", "10").equals("0")) {
      p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, a.getOrDefault("max-poll-records", "10"));
    }
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    switch (mode) {
      case "range", "static" -> p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
          "org.apache.kafka.clients.consumer.RangeAssignor");
      case "cooperative" -> p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
          "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
      case "consumer" -> p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
      default -> throw new IllegalArgumentException("unknown mode " + mode);
    }
    String session = a.getOrDefault("session-ms", "10000");
    // KIP-848 groups take their timeouts from the broker; "0": the
    // client's defaults (45 s, heartbeats every 3 s).
    if (!mode.equals("consumer") && !session.equals("0")) {
      p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, session);
      p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG,
          String.valueOf(Math.max(100, Integer.parseInt(session) / 5)));
    }
    if (a.containsKey("instance-id")) {
      p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, a.get("instance-id"));
    }
    if (a.containsKey("max-poll-interval-ms")) {
      p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, a.get("max-poll-interval-ms"));
    }

    KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p);
    Map<TopicPartition, OffsetAndMetadata> processed = new HashMap<>();
    AtomicBoolean stop = new AtomicBoolean();
    Thread main = Thread.currentThread();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      stop.set(true);
      c.wakeup();
      try {
        // Longer than close()'s own default timeout (30 s), so that a
        // close that takes it still ends with the "closed" event.
        main.join(50_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }));

    ConsumerRebalanceListener l = new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> tps) {
        emit("revoked", "partitions", parts(tps));
        Map<TopicPartition, OffsetAndMetadata> mine = new HashMap<>();
        for (TopicPartition tp : tps) {
          OffsetAndMetadata om = processed.remove(tp);
          if (om != null) {
            mine.put(tp, om);
          }
        }
        if (!mine.isEmpty()) {
          commitSync(c, mine);
        }
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> tps) {
        emit("assigned", "partitions", parts(tps), "owned", parts(c.assignment()));
      }

      @Override
      public void onPartitionsLost(Collection<TopicPartition> tps) {
        emit("lost", "partitions", parts(tps));
        tps.forEach(processed::remove);
      }
    };
    c.subscribe(List.of(topic), l);
    emit("started", "client_id", str(p.getProperty(ConsumerConfig.CLIENT_ID_CONFIG)), "mode", str(mode));
    long total = 0;
    // Every value read, so that a reader across a broker outage tells a
    // record read twice from one never read.
    Set<String> seen = new HashSet<>();
    try {
      while (!stop.get()) {
        ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(200));
        if (rs.isEmpty()) {
          continue;
        }
        for (ConsumerRecord<byte[], byte[]> r : rs) {
          processed.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
          seen.add(new String(r.value(), java.nio.charset.StandardCharsets.UTF_8));
        }
        total += rs.count();
        emit("polled", "count", String.valueOf(rs.count()), "total", String.valueOf(total),
            "distinct", String.valueOf(seen.size()),
            "partitions", parts(rs.partitions()));
        if (workMs > 0) {
          Thread.sleep(workMs);
        }
        if (commit.equals("batch")) {
          commitSync(c, new HashMap<>(processed));
        }
      }
    } catch (WakeupException e) {
      // SIGTERM: fall through to close.
    }
    String reauths = String.valueOf(reauthentications(c));
    c.close();
    emit("closed", "total", String.valueOf(total), "reauthentications", reauths);
  }

  private static void commitSync(KafkaConsumer<byte[], byte[]> c, Map<TopicPartition, OffsetAndMetadata> m) {
    try {
      c.commitSync(m);
      emit("commit", "offsets", offsets(m), "error", "\"\"");
    } catch (WakeupException e) {
      // A wakeup meant for poll can land in a commit: try once more.
      commitSync(c, m);
    } catch (Exception e) {
      emit("commit", "offsets", offsets(m), "error", str(e.getClass().getSimpleName() + ": " + e.getMessage()));
    }
  }

  // ---- produce and read: distinct payloads, order-independent checksum ----

  /** payload is record i's value: distinct, of varying length. */
  static byte[] payload(long i) {
    StringBuilder b = new StringBuilder("kproxy-e2e-record-").append(i).append('-');
    for (int k = 0; k < (int) (i % 97); k++) {
      b.append((char) ('a' + (i + k) % 26));
    }
    return b.toString().getBytes(StandardCharsets.UTF_8);
  }

  /** Sum is a count and the wrapping sum of each value's SHA-256 prefix. */
  static final class Sum {
    long count;
    long sum;
    final MessageDigest sha;

    Sum() throws Exception {
      sha = MessageDigest.getInstance("SHA-256");
    }

    void add(byte[] v) {
      byte[] d = sha.digest(v);
      long x = 0;
      for (int k = 0; k < 8; k++) {
        x = (x << 8) | (d[k] & 0xff);
      }
      sum += x;
      count++;
    }

    String hex() {
      return str(String.format("%016x", sum));
    }
  }

  private static void produce(Map<String, String> a) throws Exception {
    String topic = need(a, "topic");
    long n = Long.parseLong(need(a, "count"));
    // every-ms paces the sends (the broker outage scenario); each record is
    // retried until acknowledged (retries and delivery.timeout.ms defaults:
    // unlimited, 2 minutes).
    long everyMs = Long.parseLong(a.getOrDefault("every-ms", "0"));
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, need(a, "bootstrap"));
    security(p);
    p.put(ProducerConfig.CLIENT_ID_CONFIG, a.getOrDefault("client-id", "java-producer"));
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "10");
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    Sum s = new Sum();
    long[] failed = {0};
    String[] firstErr = {""};
    try (KafkaProducer<byte[], byte[]> pr = new KafkaProducer<>(p)) {
      emit("started", "client_id", str(p.getProperty(ProducerConfig.CLIENT_ID_CONFIG)));
      for (long i = 0; i < n; i++) {
        byte[] v = payload(i);
        s.add(v);
        pr.send(new ProducerRecord<>(topic, ("k" + i).getBytes(StandardCharsets.UTF_8), v), (md, err) -> {
          if (err != null) {
            synchronized (failed) {
              if (failed[0]++ == 0) {
                firstErr[0] = err.toString();
              }
            }
          }
        });
        if (everyMs > 0) {
          Thread.sleep(everyMs);
        }
      }
      pr.flush();
    }
    emit("produced", "count", String.valueOf(s.count), "checksum", s.hex(),
        "failed", String.valueOf(failed[0]), "error", str(firstErr[0]));
  }

  private static void read(Map<String, String> a) throws Exception {
    String topic = need(a, "topic");
    long expect = Long.parseLong(need(a, "expect"));
    long deadline = System.currentTimeMillis() + 1000L * Long.parseLong(a.getOrDefault("timeout-s", "120"));
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, need(a, "bootstrap"));
    security(p);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, need(a, "group"));
    p.put(ConsumerConfig.CLIENT_ID_CONFIG, a.getOrDefault("client-id", "java-reader"));
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    Sum s = new Sum();
    Set<String> seen = new HashSet<>();
    long dup = 0;
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
      c.subscribe(List.of(topic));
      emit("started", "client_id", str(p.getProperty(ConsumerConfig.CLIENT_ID_CONFIG)));
      while (seen.size() < expect && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
          if (seen.add(r.partition() + "/" + r.offset())) {
            s.add(r.value());
          } else {
            dup++;
          }
        }
      }
      c.commitSync();
    }
    emit("read", "count", String.valueOf(s.count), "checksum", s.hex(), "duplicates", String.valueOf(dup));
  }
}
