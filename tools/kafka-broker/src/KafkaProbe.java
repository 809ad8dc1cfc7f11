// The Java Kafka client (kafka-clients, as most producers run it) for the tests: one program
// pointed at either deltabus's Kafka-protocol listener or Apache Kafka, so each answer of the
// listener is compared with the broker's answer to the same calls.
//
//   KafkaProbe produce BOOTSTRAP TOPIC FROM COUNT CODEC
//       idempotent producer, acks=all, compression CODEC (none, gzip, snappy, lz4, zstd):
//       records FROM..FROM+COUNT, key "k<id % 7>", value {"id":..,"name":..,"codec":..};
//       prints {"acked":n,"failed":m,"error":".."} and exits 0 when every record was acked.
//   KafkaProbe consume BOOTSTRAP TOPIC GROUP MAX_POLL_RECORDS
//       assigns every partition of TOPIC, starts at GROUP's committed offsets (else the
//       earliest), reads to the end offsets it found at start, committing after each poll;
//       prints one JSON line per record {"p","o","k","v"} and {"committed":{p:offset}} after
//       each commit, then {"done":true}.
//   KafkaProbe transact BOOTSTRAP TOPIC
//       a transactional producer: initTransactions, one record in a committed transaction;
//       prints {"error":".."} (the exception's class and message, empty when committed).
//   KafkaProbe (no arguments)
//       reads such commands from standard input, one a line, and runs them in turn in one
//       JVM, each answered by its lines and then {"end":<exit code>}.
import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class KafkaProbe {
  public static void main(String[] args) throws Exception {
    if (args.length > 0) {
      System.exit(run(args));
    }
    java.io.BufferedReader in = new java.io.BufferedReader(
        new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.UTF_8));
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      if (!line.isBlank()) {
        int rc = run(line.trim().split(" +"));
        System.out.println("{\"end\":" + rc + "}");
        System.out.flush();
      }
    }
  }

  static int run(String[] args) {
    return switch (args[0]) {
      case "produce" -> produce(args[1], args[2], Long.parseLong(args[3]), Long.parseLong(args[4]), args[5]);
      case "consume" -> consume(args[1], args[2], args[3], Integer.parseInt(args[4]));
      case "transact" -> transact(args[1], args[2]);
      default -> {
        System.err.println("usage: KafkaProbe produce|consume ...");
        yield 2;
      }
    };
  }

  static int produce(String bootstrap, String topic, long from, long count, String codec) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
    p.put(ProducerConfig.CLIENT_ID_CONFIG, "probe-" + codec);
    AtomicLong acked = new AtomicLong();
    AtomicLong failed = new AtomicLong();
    AtomicReference<String> error = new AtomicReference<>("");
    try (Producer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      for (long id = from; id < from + count; id++) {
        String value = "{\"id\":" + id + ",\"name\":\"ü-名-" + id + "\",\"codec\":\"" + codec + "\"}";
        producer.send(new ProducerRecord<>(topic, "k" + (id % 7), value), (meta, e) -> {
          if (e == null) {
            acked.incrementAndGet();
          } else {
            failed.incrementAndGet();
            error.compareAndSet("", e.toString());
          }
        });
      }
      producer.flush();
    }
    System.out.println("{\"acked\":" + acked + ",\"failed\":" + failed + ",\"error\":" + quote(error.get()) + "}");
    return failed.get() == 0 && acked.get() == count ? 0 : 1;
  }

  static int transact(String bootstrap, String topic) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "probe-tx");
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
    String error = "";
    try (Producer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      producer.initTransactions();
      producer.beginTransaction();
      producer.send(new ProducerRecord<>(topic, "tx", "{\"id\":-1,\"name\":\"tx\",\"codec\":\"none\"}"));
      producer.commitTransaction();
    } catch (Exception e) {
      error = e.getClass().getSimpleName() + ": " + e.getMessage();
    }
    System.out.println("{\"error\":" + quote(error) + "}");
    return 0;
  }

  static int consume(String bootstrap, String topic, String group, int maxPoll) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(maxPoll));
    p.put(ConsumerConfig.CLIENT_ID_CONFIG, "probe-consumer");
    try (Consumer<String, String> c = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
      List<TopicPartition> parts = new ArrayList<>();
      for (PartitionInfo info : c.partitionsFor(topic, Duration.ofSeconds(30))) {
        parts.add(new TopicPartition(topic, info.partition()));
      }
      c.assign(parts);
      Map<TopicPartition, Long> end = c.endOffsets(parts, Duration.ofSeconds(30));
      long deadline = System.currentTimeMillis() + 120_000;
      while (!reached(c, end)) {
        if (System.currentTimeMillis() > deadline) {
          System.err.println("probe: not at the end offsets " + end + " within 120 s");
          return 1;
        }
        ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
        for (ConsumerRecord<String, String> r : records) {
          System.out.println("{\"p\":" + r.partition() + ",\"o\":" + r.offset() + ",\"k\":" + quote(r.key())
              + ",\"v\":" + quote(r.value()) + "}");
        }
        if (!records.isEmpty()) {
          c.commitSync();
          StringBuilder line = new StringBuilder("{\"committed\":{");
          String sep = "";
          for (TopicPartition tp : parts) {
            line.append(sep).append('"').append(tp.partition()).append("\":").append(c.position(tp));
            sep = ",";
          }
          System.out.println(line.append("}}"));
        }
        System.out.flush();
      }
    }
    System.out.println("{\"done\":true}");
    return 0;
  }

  /** Whether every partition's position is at or past the end offset found at start. */
  static boolean reached(Consumer<String, String> c, Map<TopicPartition, Long> end) {
    for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
      if (c.position(e.getKey(), Duration.ofSeconds(30)) < e.getValue()) {
        return false;
      }
    }
    return true;
  }

  static String quote(String s) {
    if (s == null) {
      return "null";
    }
    StringBuilder b = new StringBuilder("\"");
    for (char ch : s.toCharArray()) {
      switch (ch) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (ch < 0x20) {
            b.append(String.format("\\u%04x", (int) ch));
          } else {
            b.append(ch);
          }
        }
      }
    }
    return b.append('"').toString();
  }
}
