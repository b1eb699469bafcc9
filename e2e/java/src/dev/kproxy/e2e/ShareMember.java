package dev.kproxy.e2e;

import static dev.kproxy.e2e.Client.emit;
import static dev.kproxy.e2e.Client.need;
import static dev.kproxy.e2e.Client.security;
import static dev.kproxy.e2e.Client.str;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * ShareMember is the workload of scenarios 28 and 51: a KafkaShareConsumer
 * (KIP-932) in a share group, acknowledging every record explicitly.
 *
 * <pre>
 * share --bootstrap B --group G --topic T [--client-id C] [--hold leave|stay]
 *       [--first release|reject]
 * </pre>
 *
 * For every record it receives it prints a "record" event (partition,
 * offset, key, value, delivery_count) and accepts it; after each batch it
 * commits the acknowledgements (commitSync) and prints "acked" with how many
 * it committed and the first failure, if any. SIGTERM closes it ("closed",
 * with the total); an exception from the consumer is printed as "error" and
 * ends the process with status 1.
 *
 * <p>With --hold, it acknowledges nothing of the first batch it receives:
 * it prints a "held" event for each of its records (partition, offset,
 * delivery_count), then "holding" with their count, and then, with leave,
 * closes at once, leaving the group holding them ("closed", total 0); with
 * stay, it stops polling and waits, holding them, until it is killed (its
 * acquisition locks expire) or terminated.
 *
 * <p>With --first, it acknowledges the records of its first batch as
 * RELEASE (to be delivered again) or REJECT (never again) instead of
 * ACCEPT, printing a "first" event for each (partition, offset,
 * delivery_count, result) and "first_acked" once committed (count, result,
 * error), then goes on accepting.
 */
final class ShareMember {
  private ShareMember() {}

  static void run(Map<String, String> a) throws Exception {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, need(a, "bootstrap"));
    security(p);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, need(a, "group"));
    p.put(ConsumerConfig.CLIENT_ID_CONFIG, a.getOrDefault("client-id", "java-share"));
    // By name: kafka-clients 3.9 has KafkaShareConsumer but not
    // ConsumerConfig's constant for this, nor ConsumerRecord.deliveryCount.
    p.put("share.acknowledgement.mode", "explicit");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p);
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
    c.subscribe(List.of(need(a, "topic")));
    emit("started", "client_id", str(p.getProperty(ConsumerConfig.CLIENT_ID_CONFIG)));
    String hold = a.getOrDefault("hold", "");
    if (!hold.isEmpty() && !hold.equals("leave") && !hold.equals("stay")) {
      throw new IllegalArgumentException("--hold: leave or stay, not " + hold);
    }
    String first = a.getOrDefault("first", "");
    AcknowledgeType firstAs = switch (first) {
      case "" -> null;
      case "release" -> AcknowledgeType.RELEASE;
      case "reject" -> AcknowledgeType.REJECT;
      default -> throw new IllegalArgumentException("--first: release or reject, not " + first);
    };
    long total = 0;
    try {
      while (!stop.get()) {
        ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
        if (rs.isEmpty()) {
          continue;
        }
        if (!hold.isEmpty()) {
          for (ConsumerRecord<String, String> r : rs) {
            emit("held", "partition", String.valueOf(r.partition()), "offset", String.valueOf(r.offset()),
                "delivery_count", deliveryCount(r));
          }
          emit("holding", "count", String.valueOf(rs.count()));
          if (hold.equals("stay")) {
            while (!stop.get()) {
              Thread.sleep(100);
            }
          }
          break;
        }
        if (firstAs != null) {
          for (ConsumerRecord<String, String> r : rs) {
            emit("first", "partition", String.valueOf(r.partition()), "offset", String.valueOf(r.offset()),
                "delivery_count", deliveryCount(r), "result", str(first));
            c.acknowledge(r, firstAs);
          }
          emit("first_acked", "count", String.valueOf(rs.count()), "result", str(first), "error", str(commit(c)));
          firstAs = null;
          continue;
        }
        for (ConsumerRecord<String, String> r : rs) {
          emit("record", "partition", String.valueOf(r.partition()), "offset", String.valueOf(r.offset()),
              "key", str(r.key()), "value", str(r.value()), "delivery_count", deliveryCount(r));
          c.acknowledge(r, AcknowledgeType.ACCEPT);
        }
        String firstErr = commit(c);
        total += rs.count();
        emit("acked", "count", String.valueOf(rs.count()), "total", String.valueOf(total), "error", str(firstErr));
      }
    } catch (WakeupException e) {
      // SIGTERM: fall through to close.
    } catch (Exception e) {
      emit("error", "error", str(e.toString()));
      c.close();
      throw e;
    }
    c.close();
    emit("closed", "total", String.valueOf(total));
  }

  /** commit commits c's acknowledgements and returns the first failure, "" if none. */
  private static String commit(KafkaShareConsumer<String, String> c) {
    for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : c.commitSync().entrySet()) {
      if (e.getValue().isPresent()) {
        return e.getKey() + ": " + e.getValue().get();
      }
    }
    return "";
  }

  /**
   * deliveryCount is how many times the broker delivered r (1 the first
   * time), by reflection: kafka-clients 3.9, which this class also compiles
   * against, has no ConsumerRecord.deliveryCount. 0 where unknown.
   */
  private static String deliveryCount(ConsumerRecord<?, ?> r) {
    try {
      Object o = r.getClass().getMethod("deliveryCount").invoke(r);
      if (o instanceof Optional<?> opt && opt.isPresent()) {
        return String.valueOf(opt.get());
      }
    } catch (ReflectiveOperationException e) {
      // 3.9: unknown.
    }
    return "0";
  }
}
