/*
 * Kafka's Java client doing exactly-once (KIP-98, KIP-447): a consume-transform-produce
 * application with a transactional KafkaProducer and a read_committed KafkaConsumer, and a
 * zombie producer fenced by its successor. tests/compat/test_java_transactions.py runs it
 * against minikafka, tests/reference/test_java_transactions.py against Apache Kafka.
 *
 * Driven as JavaClient.java is: a JSON object on stdin, {"bootstrap": "host:port", "steps":
 * [{"op": ...}, ...]}; each step prints one line, {"step": n, "op": ..., "result": ...}, or
 * {"step": n, "op": ..., "error": {"type": ..., "message": ...}} when the client threw.
 *
 * Ops:
 *   copy   the application: a consumer of "group" (read_committed, no auto-commit,
 *          subscribed to "input", at most "max_poll" records a poll) and a producer with
 *          "transactional_id". Each poll's records go to "output" (value "copy-" + value,
 *          same key) in one transaction, with the consumer's next offsets sent by
 *          sendOffsetsToTransaction and its group metadata (generation and member id). The
 *          transactions numbered in "abort" (from 0) are flushed and then aborted, and the
 *          consumer is rewound to the group's committed offsets, so a later transaction
 *          copies those records again. It stops once "count" records were copied by
 *          committed transactions.
 *   fence  a producer with "transactional_id" writes "zombie" values to "topic" in an open
 *          transaction; a second producer with the same id calls initTransactions, which
 *          fences the first and aborts its transaction; the first's commit then throws
 *          (its exception's type is the result's "fenced"); the second writes "successor"
 *          values and commits.
 *   read   every record of "topic" with "isolation" (read_committed or read_uncommitted),
 *          from the beginning to the end offsets the consumer is given (the last stable
 *          offset under read_committed), once it has at least "count" records (if given:
 *          a commit is answered before its markers are written, so a read_committed
 *          reader may see the last transaction a moment later): [partition, offset,
 *          value] in partition order.
 */

import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

@SuppressWarnings("unchecked")
public final class JavaExactlyOnce {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final PrintStream OUT =
            new PrintStream(System.out, true, StandardCharsets.UTF_8);
    private static final long WAIT_MS = 60_000;

    private final String bootstrap;

    private JavaExactlyOnce(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    public static void main(String[] args) throws Exception {
        Map<String, Object> scenario = JSON.readValue(System.in, Map.class);
        Object bootstrap = scenario.get("bootstrap");
        Object steps = scenario.get("steps");
        if (!(bootstrap instanceof String) || !(steps instanceof List)) {
            System.err.println("JavaExactlyOnce: the scenario needs \"bootstrap\" and \"steps\"");
            System.exit(2);
        }
        JavaExactlyOnce program = new JavaExactlyOnce((String) bootstrap);
        int number = 0;
        for (Object step : (List<Object>) steps) {
            program.run(number++, (Map<String, Object>) step);
        }
    }

    private void run(int number, Map<String, Object> step) throws Exception {
        String op = (String) step.get("op");
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("step", number);
        line.put("op", op);
        try {
            switch (op) {
                case "copy": line.put("result", copy(step)); break;
                case "fence": line.put("result", fence(step)); break;
                case "read": line.put("result", read(step)); break;
                default: throw new IllegalArgumentException("unknown op " + op);
            }
        } catch (Exception e) {
            Throwable cause = e;
            while (cause instanceof ExecutionException && cause.getCause() != null) {
                cause = cause.getCause();
            }
            Map<String, Object> error = new LinkedHashMap<>();
            error.put("type", cause.getClass().getSimpleName());
            error.put("message", String.valueOf(cause.getMessage()));
            line.put("error", error);
        }
        OUT.println(JSON.writeValueAsString(line));
    }

    private Properties producerConfig(String transactionalId) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("transactional.id", transactionalId);
        props.put("max.block.ms", String.valueOf(WAIT_MS));
        return props;
    }

    private Properties consumerConfig(String isolation) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("isolation.level", isolation);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        return props;
    }

    // --- the consume-transform-produce application -----------------------------------------

    private Object copy(Map<String, Object> step) throws Exception {
        String input = (String) step.get("input");
        String output = (String) step.get("output");
        int count = ((Number) step.get("count")).intValue();
        Set<Integer> abort = new HashSet<>((List<Integer>) step.get("abort"));
        Properties consumerProps = consumerConfig("read_committed");
        consumerProps.put("group.id", step.get("group"));
        consumerProps.put("max.poll.records", String.valueOf(step.get("max_poll")));
        int copied = 0;
        int transaction = 0;
        List<String> abortedValues = new ArrayList<>();
        Map<String, Object> result = new LinkedHashMap<>();
        long deadline = System.currentTimeMillis() + WAIT_MS;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(
                consumerProps, new StringDeserializer(), new StringDeserializer());
             KafkaProducer<String, String> producer = new KafkaProducer<>(
                producerConfig((String) step.get("transactional_id")),
                new StringSerializer(), new StringSerializer())) {
            producer.initTransactions();
            consumer.subscribe(List.of(input));
            while (copied < count) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException(
                        "copied " + copied + " of " + count + " in " + WAIT_MS + " ms");
                }
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> next = new LinkedHashMap<>();
                List<String> values = new ArrayList<>();
                for (ConsumerRecord<String, String> r : records) {
                    String value = "copy-" + r.value();
                    producer.send(new ProducerRecord<>(output, r.key(), value));
                    values.add(value);
                    next.put(new TopicPartition(r.topic(), r.partition()),
                        new OffsetAndMetadata(r.offset() + 1));
                }
                producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                if (abort.contains(transaction)) {
                    // Written first, so that read_uncommitted readers see what the abort
                    // hides from read_committed ones.
                    producer.flush();
                    producer.abortTransaction();
                    abortedValues.addAll(values);
                    rewind(consumer);
                } else {
                    producer.commitTransaction();
                    copied += values.size();
                }
                transaction++;
            }
            Map<String, Object> committed = new TreeMap<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e
                    : consumer.committed(consumer.assignment()).entrySet()) {
                if (e.getValue() != null) {
                    committed.put(e.getKey().toString(), e.getValue().offset());
                }
            }
            result.put("transactions", transaction);
            result.put("copied", copied);
            result.put("aborted_values", abortedValues);
            result.put("committed", committed);
            result.put("generation", consumer.groupMetadata().generationId());
        }
        return result;
    }

    /** Back to the group's committed offsets (the start where none is committed yet). */
    private static void rewind(KafkaConsumer<String, String> consumer) {
        Set<TopicPartition> assigned = consumer.assignment();
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned);
        for (TopicPartition tp : assigned) {
            OffsetAndMetadata at = committed.get(tp);
            if (at == null) {
                consumer.seekToBeginning(List.of(tp));
            } else {
                consumer.seek(tp, at.offset());
            }
        }
    }

    // --- a zombie and its successor ----------------------------------------------------------

    private Object fence(Map<String, Object> step) throws Exception {
        String topic = (String) step.get("topic");
        String id = (String) step.get("transactional_id");
        Map<String, Object> result = new LinkedHashMap<>();
        KafkaProducer<String, String> zombie = new KafkaProducer<>(
            producerConfig(id), new StringSerializer(), new StringSerializer());
        try {
            zombie.initTransactions();
            zombie.beginTransaction();
            for (String value : (List<String>) step.get("zombie")) {
                zombie.send(new ProducerRecord<>(topic, 0, null, value));
            }
            zombie.flush();
            try (KafkaProducer<String, String> successor = new KafkaProducer<>(
                    producerConfig(id), new StringSerializer(), new StringSerializer())) {
                successor.initTransactions(); // a new epoch: the zombie is fenced
                String fenced = null;
                try {
                    zombie.commitTransaction();
                } catch (Exception e) {
                    fenced = e.getClass().getSimpleName();
                }
                result.put("fenced", fenced);
                successor.beginTransaction();
                for (String value : (List<String>) step.get("successor")) {
                    successor.send(new ProducerRecord<>(topic, 0, null, value));
                }
                successor.commitTransaction();
                result.put("successor_committed", true);
            }
        } finally {
            zombie.close(Duration.ZERO);
        }
        return result;
    }

    // --- reading a topic to its end ----------------------------------------------------------

    private Object read(Map<String, Object> step) throws Exception {
        String topic = (String) step.get("topic");
        List<Object> out = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(
                consumerConfig((String) step.get("isolation")),
                new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic)) {
                tps.add(new TopicPartition(topic, p.partition()));
            }
            tps.sort((a, b) -> Integer.compare(a.partition(), b.partition()));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            int count = step.get("count") == null ? 0 : ((Number) step.get("count")).intValue();
            Map<Integer, List<Object>> got = new TreeMap<>();
            int read = 0;
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (true) {
                if (read >= count) {
                    Map<TopicPartition, Long> end = consumer.endOffsets(tps);
                    if (tps.stream().allMatch(tp -> consumer.position(tp) >= end.get(tp))) {
                        break;
                    }
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException(
                        "read " + read + " records, not " + count + ", or not to the end");
                }
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    got.computeIfAbsent(r.partition(), k -> new ArrayList<>())
                        .add(List.of(r.partition(), r.offset(), r.value()));
                    read++;
                }
            }
            for (List<Object> records : got.values()) {
                out.addAll(records);
            }
        }
        return out;
    }
}
