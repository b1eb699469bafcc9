package dev.kproxy.e2e;

import static dev.kproxy.e2e.Client.emit;
import static dev.kproxy.e2e.Client.need;
import static dev.kproxy.e2e.Client.security;
import static dev.kproxy.e2e.Client.str;

import java.util.Collection;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * StreamsApp is scenario 27's workload: a Kafka Streams application with
 * processing.guarantee=exactly_once_v2.
 *
 * <pre>
 * streams --bootstrap B --app-id A --input I --output O --counts C --state-dir D [--client-id C]
 *         [--group-protocol classic|streams] [--app-server HOST:PORT] [--guarantee G]
 *         [--acceptable-lag N] [--probing-ms MS]
 * </pre>
 *
 * From the input topic (String keys and values) it writes every record to the
 * output topic with its value upper-cased, and, per key, the number of records
 * seen so far to the counts topic (a KTable count, String keys, Long values;
 * with the record cache off every update is written, so the counts of a key
 * are 1, 2, ... n). It prints "state" at each state change of the application
 * and "error" for an exception that stops it, which ends the process with
 * status 1; SIGTERM closes it cleanly ("closed").
 *
 * <p>With --group-protocol streams it joins a KIP-1071 streams group instead
 * of a classic consumer group (scenario 48), and prints "tasks" whenever the
 * tasks of its stream thread or the application's state change: the active
 * and standby task ids
 * ("0_1") and the thread's consumer client id, the client id kproxy sees.
 * --app-server sets application.server (the member's endpoint);
 * --guarantee the processing guarantee (default exactly_once_v2).
 *
 * <p>With --group-protocol classic it is a classic consumer group with
 * Streams' own assignor (scenario 53) and prints "tasks" the same way.
 * --acceptable-lag sets acceptable.recovery.lag and --probing-ms
 * probing.rebalance.interval.ms (KIP-441: a member whose state lags by more
 * gets a task as a warm-up first, and the leader schedules a probing
 * rebalance to move it once caught up).
 */
final class StreamsApp {
  private StreamsApp() {}

  static void run(Map<String, String> a) throws Exception {
    Properties p = new Properties();
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, need(a, "bootstrap"));
    security(p);
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, need(a, "app-id"));
    p.put(StreamsConfig.CLIENT_ID_CONFIG, a.getOrDefault("client-id", "java-streams"));
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, a.getOrDefault("guarantee", StreamsConfig.EXACTLY_ONCE_V2));
    String protocol = a.get("group-protocol");
    if (protocol != null) {
      // StreamsConfig.GROUP_PROTOCOL_CONFIG is 4.1+: the suite also
      // compiles this client against kafka-streams 3.9.2.
      p.put("group.protocol", protocol);
    }
    if (a.containsKey("app-server")) {
      p.put(StreamsConfig.APPLICATION_SERVER_CONFIG, a.get("app-server"));
    }
    if (a.containsKey("acceptable-lag")) {
      p.put("acceptable.recovery.lag", a.get("acceptable-lag"));
    }
    if (a.containsKey("probing-ms")) {
      p.put("probing.rebalance.interval.ms", a.get("probing-ms"));
    }
    p.put(StreamsConfig.STATE_DIR_CONFIG, need(a, "state-dir"));
    p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");

    StreamsBuilder b = new StreamsBuilder();
    KStream<String, String> in = b.stream(need(a, "input"), Consumed.with(Serdes.String(), Serdes.String()));
    in.mapValues(v -> v.toUpperCase(Locale.ROOT)).to(need(a, "output"), Produced.with(Serdes.String(), Serdes.String()));
    in.groupByKey().count(Materialized.as("counts-store")).toStream()
        .to(need(a, "counts"), Produced.with(Serdes.String(), Serdes.Long()));

    CountDownLatch done = new CountDownLatch(1);
    KafkaStreams ks = new KafkaStreams(b.build(), p);
    ks.setStateListener((now, before) -> {
      emit("state", "state", str(now.name()), "before", str(before.name()));
      if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) {
        done.countDown();
      }
    });
    ks.setUncaughtExceptionHandler(e -> {
      emit("error", "error", str(e.toString()));
      return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    Thread main = Thread.currentThread();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      ks.close();
      try {
        main.join(30_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }));
    ks.start();
    emit("started", "client_id", str(p.getProperty(StreamsConfig.CLIENT_ID_CONFIG)));
    if (protocol != null) {
      printTasks(ks, done);
    }
    done.await();
    emit("closed", "state", str(ks.state().name()));
    if (ks.state() == KafkaStreams.State.ERROR) {
      // Not System.exit: the shutdown hook would wait for this thread.
      System.out.flush();
      Runtime.getRuntime().halt(1);
    }
  }

  /**
   * printTasks starts a daemon thread that prints "tasks" each time the
   * application's active or standby tasks change, until done.
   */
  private static void printTasks(KafkaStreams ks, CountDownLatch done) {
    Thread t = new Thread(() -> {
      String last = "";
      while (done.getCount() > 0) {
        try {
          TreeSet<String> active = new TreeSet<>();
          TreeSet<String> standby = new TreeSet<>();
          TreeSet<String> consumers = new TreeSet<>();
          for (ThreadMetadata m : ks.metadataForLocalThreads()) {
            m.activeTasks().forEach(x -> active.add(x.taskId().toString()));
            m.standbyTasks().forEach(x -> standby.add(x.taskId().toString()));
            consumers.add(m.consumerClientId());
          }
          // The state too: tasks printed while REBALANCING are printed
          // again once RUNNING, so the last "tasks" says whether they
          // settled.
          String now = active + "/" + standby + "/" + consumers + "/" + ks.state();
          if (!now.equals(last)) {
            last = now;
            emit("tasks", "active", strs(active), "standby", strs(standby),
                "client_id", str(String.join(",", consumers)), "state", str(ks.state().name()));
          }
          Thread.sleep(100);
        } catch (InterruptedException e) {
          return;
        } catch (RuntimeException e) {
          // metadataForLocalThreads refuses while the application is not
          // running yet or any more: ask again.
          try {
            Thread.sleep(100);
          } catch (InterruptedException ie) {
            return;
          }
        }
      }
    }, "print-tasks");
    t.setDaemon(true);
    t.start();
  }

  private static String strs(Collection<String> ss) {
    StringBuilder b = new StringBuilder("[");
    for (String s : ss) {
      if (b.length() > 1) {
        b.append(',');
      }
      b.append(str(s));
    }
    return b.append(']').toString();
  }
}
