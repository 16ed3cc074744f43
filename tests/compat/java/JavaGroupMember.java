/*
 * One member of a consumer group in a JVM of its own: a process a test can SIGKILL, so
 * the group loses a member the way it does when a machine dies (no LeaveGroup, no
 * ConsumerGroupHeartbeat with epoch -1: only the coordinator's session timeout ends it).
 * tests/compat/test_java_consumer_protocol.py runs several at once.
 *
 * stdin: a first line, a JSON object {"bootstrap", "topic", "name", "config": {...}} (the
 * consumer's settings: group.id, group.protocol, ...); then commands, one a line:
 *   describe   the group, by the Admin client's describeConsumerGroups (KIP-848's
 *              ConsumerGroupDescribe for a consumer group), and its committed offsets
 *   stop       close the consumer: it leaves the group, and the program ends
 * End of input is "stop".
 *
 * stdout: one JSON line an event, each with the time it happened ("at": System.nanoTime()
 * in seconds: CLOCK_MONOTONIC on Linux, the clock of Python's time.monotonic(), so a test
 * can order the events of several processes):
 *   {"event": "assigned" | "revoked" | "lost", "partitions": [...], "epoch": n}
 *              a rebalance callback (the member epoch, or the generation of a classic
 *              member, as the consumer's group metadata says after it)
 *   {"event": "read", "records": [[partition, offset], ...], "outside": [...]}
 *              a batch poll() returned, before it is committed; "outside" lists the
 *              records of partitions the member did not own at the time (none, if the
 *              client is right)
 *   {"event": "committed", "ok": true} or {"ok": false, "error": "..."}
 *              the synchronous commit of the batch just read
 *   {"event": "described", "group": {...}}   the answer to "describe"
 *   {"event": "failed", "error": "..."}      the consumer threw; the program ends
 *   {"event": "closed"}                      after "stop", the consumer closed
 */

import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberAssignment;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

@SuppressWarnings("unchecked")
public final class JavaGroupMember implements ConsumerRebalanceListener {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final PrintStream OUT =
            new PrintStream(System.out, true, StandardCharsets.UTF_8);
    private static final long WAIT_MS = 30_000;

    private final KafkaConsumer<String, String> consumer;
    private final Properties props;
    private final String group;
    /** Touched by the polling thread only (callbacks run inside poll()). */
    private final Set<Integer> owned = new HashSet<>();
    private volatile boolean stopping;

    private JavaGroupMember(Properties props) {
        this.props = props;
        this.group = props.getProperty("group.id");
        this.consumer = new KafkaConsumer<>(
            props, new StringDeserializer(), new StringDeserializer());
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(
            new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Map<String, Object> setup = JSON.readValue(in.readLine(), Map.class);
        Properties props = new Properties();
        props.put("bootstrap.servers", setup.get("bootstrap"));
        props.put("client.id", setup.get("name"));
        for (Map.Entry<String, Object> e
                : ((Map<String, Object>) setup.get("config")).entrySet()) {
            props.put(e.getKey(), String.valueOf(e.getValue()));
        }
        JavaGroupMember member = new JavaGroupMember(props);
        Thread commands = new Thread(() -> member.obey(in), "commands");
        commands.setDaemon(true);
        commands.start();
        member.run((String) setup.get("topic"));
    }

    private static double now() {
        return System.nanoTime() / 1e9;
    }

    private static synchronized void print(String event, Map<String, Object> fields) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("event", event);
        line.put("at", now());
        line.putAll(fields);
        try {
            OUT.println(JSON.writeValueAsString(line));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    // --- the consumer: poll, report, commit, until told to stop ---------------------------

    private void run(String topic) {
        try {
            consumer.subscribe(List.of(topic), this);
            while (!stopping) {
                List<Object> records = new ArrayList<>();
                List<Object> outside = new ArrayList<>();
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    List<Object> record = List.of(r.partition(), r.offset());
                    records.add(record);
                    if (!owned.contains(r.partition())) {
                        outside.add(record);
                    }
                }
                if (records.isEmpty()) {
                    continue;
                }
                print("read", Map.of("records", records, "outside", outside));
                try {
                    consumer.commitSync(Duration.ofMillis(WAIT_MS));
                    print("committed", Map.of("ok", true));
                } catch (Exception e) {
                    // A partition moved, or the member was fenced: whoever owns the
                    // partition next reads the batch again (at least once).
                    print("committed", Map.of("ok", false, "error", e.toString()));
                }
            }
            consumer.close(CloseOptions.timeout(Duration.ofMillis(WAIT_MS)));
            print("closed", Map.of());
        } catch (Exception e) {
            print("failed", Map.of("error", e.toString()));
            System.exit(1);
        }
    }

    private void event(String kind, Collection<TopicPartition> partitions) {
        List<Integer> numbers = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            numbers.add(tp.partition());
        }
        numbers.sort(null);
        if (kind.equals("assigned")) {
            owned.addAll(numbers);
        } else {
            owned.removeAll(numbers);
        }
        print(kind, Map.of(
            "partitions", numbers,
            "epoch", consumer.groupMetadata().generationId()));
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        event("assigned", partitions);
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        event("revoked", partitions);
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
        event("lost", partitions);
    }

    // --- commands from stdin --------------------------------------------------------------

    private void obey(BufferedReader in) {
        try (Admin admin = Admin.create(adminProps())) {
            String line;
            while ((line = in.readLine()) != null && !line.strip().equals("stop")) {
                if (line.strip().equals("describe")) {
                    try {
                        print("described", Map.of("group", describe(admin)));
                    } catch (Exception e) {
                        print("described", Map.of("error", e.toString()));
                    }
                }
            }
        } catch (Exception e) {
            print("failed", Map.of("error", e.toString()));
        }
        stopping = true;
    }

    private Properties adminProps() {
        Properties admin = new Properties();
        admin.put("bootstrap.servers", props.getProperty("bootstrap.servers"));
        admin.put("client.id", props.getProperty("client.id") + "-admin");
        return admin;
    }

    private Map<String, Object> describe(Admin admin) throws Exception {
        ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group))
            .describedGroups().get(group).get(WAIT_MS, TimeUnit.MILLISECONDS);
        List<Object> members = new ArrayList<>();
        for (MemberDescription m : d.members()) {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("member_id", m.consumerId());
            one.put("client_id", m.clientId());
            one.put("partitions", numbers(m.assignment()));
            one.put("target", m.targetAssignment().map(JavaGroupMember::numbers).orElse(null));
            one.put("epoch", m.memberEpoch().orElse(null));
            one.put("upgraded", m.upgraded().orElse(null));
            members.add(one);
        }
        Map<String, Object> committed = new TreeMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : admin
                .listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                .get(WAIT_MS, TimeUnit.MILLISECONDS).entrySet()) {
            if (e.getValue() != null) {
                committed.put(String.valueOf(e.getKey().partition()), e.getValue().offset());
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("type", d.type().toString());
        out.put("state", d.groupState().toString());
        out.put("assignor", d.partitionAssignor());
        out.put("group_epoch", d.groupEpoch().orElse(null));
        out.put("assignment_epoch", d.targetAssignmentEpoch().orElse(null));
        out.put("members", members);
        out.put("committed", committed);
        return out;
    }

    private static List<Integer> numbers(MemberAssignment assignment) {
        List<Integer> out = new ArrayList<>();
        for (TopicPartition tp : assignment.topicPartitions()) {
            out.add(tp.partition());
        }
        out.sort(null);
        return out;
    }
}
