/*
 * Kafka's Java client (kafka-clients) driven by a scenario: the fifth client of minikafka's
 * compatibility tests (tests/compat/test_java.py, tests/cluster/test_java_client.py).
 *
 * One JVM runs a whole scenario, so a test pays the JVM's start once. The scenario is a JSON
 * object on stdin: {"bootstrap": "host:port", "steps": [{"op": ...}, ...]}. Each step prints
 * one JSON line on stdout, {"step": n, "op": ..., "result": ...} or, when the client threw,
 * {"step": n, "op": ..., "error": {"type": "UnsupportedVersionException", "message": ...}}:
 * a step that fails does not end the scenario, so a test can expect an error and go on.
 *
 * Ops:
 *   produce          records [{key, value, partition?}] with a producer's config; the
 *                    partition and offset each record was acknowledged at, in order
 *   produce_numbers  0, 1, 2, ... to each of some partitions until a stop file appears,
 *                    printing {"acked": [[partition, number], ...]} lines as acks come
 *   consume          assign partitions (and seek: an offset, beginning, end or a timestamp)
 *                    or subscribe; read up to count records; commit; the records, positions
 *                    and committed offsets
 *   join             a group member in a thread of its own, polling until told to leave; it
 *                    records its rebalance callbacks, its generation and what it read
 *   await_group      until the named members share the topic's partitions, disjointly
 *   await_records    until the named members have read count records between them
 *   leave            close a member (static members stay in the group, as Kafka says)
 *   admin            one Admin call (action: create_topics, describe_cluster, ...)
 *
 * Strings are UTF-8 keys and values; a null key stays null.
 */

import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

@SuppressWarnings("unchecked")
public final class JavaClient {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final PrintStream OUT =
            new PrintStream(System.out, true, StandardCharsets.UTF_8);
    private static final long WAIT_MS = 60_000;

    private final String bootstrap;
    private final Map<String, Member> members = new ConcurrentHashMap<>();
    private Admin admin;

    private JavaClient(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    public static void main(String[] args) throws Exception {
        Map<String, Object> scenario = JSON.readValue(System.in, Map.class);
        Object bootstrap = scenario.get("bootstrap");
        Object steps = scenario.get("steps");
        if (!(bootstrap instanceof String) || !(steps instanceof List)) {
            System.err.println("JavaClient: the scenario needs \"bootstrap\" and \"steps\"");
            System.exit(2);
        }
        JavaClient client = new JavaClient((String) bootstrap);
        int number = 0;
        try {
            for (Object step : (List<Object>) steps) {
                client.run(number++, (Map<String, Object>) step);
            }
        } finally {
            client.closeAll();
        }
    }

    private void run(int number, Map<String, Object> step) throws Exception {
        String op = (String) step.get("op");
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("step", number);
        line.put("op", op);
        try {
            line.put("result", dispatch(op, step));
        } catch (Exception e) {
            Throwable cause = e;
            while ((cause instanceof ExecutionException || cause instanceof RuntimeWrapper)
                    && cause.getCause() != null) {
                cause = cause.getCause();
            }
            Map<String, Object> error = new LinkedHashMap<>();
            error.put("type", cause.getClass().getSimpleName());
            error.put("message", String.valueOf(cause.getMessage()));
            line.put("error", error);
        }
        print(line);
    }

    private static synchronized void print(Object value) {
        try {
            OUT.println(JSON.writeValueAsString(value));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private Object dispatch(String op, Map<String, Object> step) throws Exception {
        switch (op) {
            case "produce": return produce(step);
            case "produce_numbers": return produceNumbers(step);
            case "consume": return consume(step);
            case "join": return join(step);
            case "await_group": return awaitGroup(step);
            case "await_records": return awaitRecords(step);
            case "leave": return leave(step);
            case "admin": return admin(step);
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    // --- configuration --------------------------------------------------------------------

    private Properties config(Map<String, Object> step) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        Object given = step.get("config");
        if (given != null) {
            for (Map.Entry<String, Object> e : ((Map<String, Object>) given).entrySet()) {
                props.put(e.getKey(), String.valueOf(e.getValue()));
            }
        }
        return props;
    }

    private static int integer(Map<String, Object> step, String key, int otherwise) {
        Object value = step.get(key);
        return value == null ? otherwise : ((Number) value).intValue();
    }

    // --- produce --------------------------------------------------------------------------

    private Object produce(Map<String, Object> step) throws Exception {
        String topic = (String) step.get("topic");
        List<Map<String, Object>> records = (List<Map<String, Object>>) step.get("records");
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        List<Object> acks = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(
                config(step), new StringSerializer(), new StringSerializer())) {
            for (Map<String, Object> r : records) {
                Integer partition = r.get("partition") == null
                        ? null : ((Number) r.get("partition")).intValue();
                futures.add(producer.send(new ProducerRecord<>(
                        topic, partition, (String) r.get("key"), (String) r.get("value"))));
            }
            producer.flush();
            for (Future<RecordMetadata> f : futures) {
                RecordMetadata m = f.get(WAIT_MS, TimeUnit.MILLISECONDS);
                // acks=0: no answer, so no offset (-1).
                acks.add(List.of(m.partition(), m.hasOffset() ? m.offset() : -1));
            }
        }
        return Map.of("acks", acks);
    }

    /**
     * Numbered records to each partition until the stop file exists. The acknowledgements
     * are printed as they come, gathered into a line every 50 ms ({"acked": [[partition,
     * number], ...]}, in the order the callbacks ran), so the reader keeps up cheaply.
     */
    private Object produceNumbers(Map<String, Object> step) throws Exception {
        String topic = (String) step.get("topic");
        List<Integer> partitions = (List<Integer>) step.get("partitions");
        Path stop = Path.of((String) step.get("stop_file"));
        List<String> errors = new ArrayList<>();
        List<Object> acked = new ArrayList<>();
        long sent = 0;
        long flushed = System.currentTimeMillis();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(
                config(step), new StringSerializer(), new StringSerializer())) {
            for (long n = 0; !Files.exists(stop); n++) {
                for (int p : partitions) {
                    final long number = n;
                    producer.send(new ProducerRecord<>(topic, p, null, Long.toString(n)),
                        (metadata, exception) -> {
                            synchronized (acked) {
                                if (exception != null) {
                                    errors.add(exception.toString());
                                } else {
                                    acked.add(List.of(p, number));
                                }
                            }
                        });
                    sent++;
                }
                Thread.sleep(1); // about 1,000 records a second to each partition
                if (System.currentTimeMillis() - flushed >= 50) {
                    printAcked(acked);
                    flushed = System.currentTimeMillis();
                }
            }
            producer.flush(); // every callback has run when it returns
        }
        printAcked(acked);
        synchronized (acked) {
            return Map.of("sent", sent, "errors", errors);
        }
    }

    private static void printAcked(List<Object> acked) {
        List<Object> batch;
        synchronized (acked) {
            batch = new ArrayList<>(acked);
            acked.clear();
        }
        if (!batch.isEmpty()) {
            print(Map.of("acked", batch));
        }
    }

    // --- consume by assign, or one subscription read to a count ---------------------------

    private Object consume(Map<String, Object> step) throws Exception {
        Properties props = config(step);
        int count = integer(step, "count", 0);
        long deadline = System.currentTimeMillis() + integer(step, "timeout_ms", 30_000);
        List<Object> read = new ArrayList<>();
        Map<String, Object> result = new LinkedHashMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(
                props, new StringDeserializer(), new StringDeserializer())) {
            if (step.get("assign") != null) {
                List<TopicPartition> tps = new ArrayList<>();
                for (List<Object> tp : (List<List<Object>>) step.get("assign")) {
                    tps.add(new TopicPartition((String) tp.get(0), (Integer) tp.get(1)));
                }
                consumer.assign(tps);
                seek(consumer, (List<Map<String, Object>>) step.get("seek"));
            } else {
                consumer.subscribe((List<String>) step.get("subscribe"));
            }
            while (read.size() < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    read.add(record(r));
                }
            }
            Object commit = step.get("commit");
            if (commit instanceof List) {
                Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
                for (Map<String, Object> o : (List<Map<String, Object>>) commit) {
                    offsets.put(
                        new TopicPartition((String) o.get("topic"), (Integer) o.get("partition")),
                        new OffsetAndMetadata(((Number) o.get("offset")).longValue(),
                            (String) o.getOrDefault("metadata", "")));
                }
                consumer.commitSync(offsets);
            } else if (Boolean.TRUE.equals(commit)) {
                consumer.commitSync();
            }
            Map<String, Object> positions = new TreeMap<>();
            Set<TopicPartition> assigned = consumer.assignment();
            for (TopicPartition tp : assigned) {
                positions.put(tp.toString(), consumer.position(tp));
            }
            result.put("records", read);
            result.put("positions", positions);
            if (props.containsKey("group.id")) {
                Map<String, Object> committed = new TreeMap<>();
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e
                        : consumer.committed(assigned).entrySet()) {
                    if (e.getValue() != null) {
                        committed.put(e.getKey().toString(), List.of(
                            e.getValue().offset(), e.getValue().metadata()));
                    }
                }
                result.put("committed", committed);
            }
        }
        return result;
    }

    private static void seek(KafkaConsumer<String, String> consumer,
                             List<Map<String, Object>> seeks) {
        if (seeks == null) {
            return;
        }
        for (Map<String, Object> s : seeks) {
            TopicPartition tp =
                new TopicPartition((String) s.get("topic"), (Integer) s.get("partition"));
            if (s.get("offset") != null) {
                consumer.seek(tp, ((Number) s.get("offset")).longValue());
            } else if ("beginning".equals(s.get("to"))) {
                consumer.seekToBeginning(List.of(tp));
            } else if ("end".equals(s.get("to"))) {
                consumer.seekToEnd(List.of(tp));
            } else if (s.get("timestamp") != null) {
                Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(
                    Map.of(tp, ((Number) s.get("timestamp")).longValue()));
                OffsetAndTimestamp at = found.get(tp);
                if (at == null) {
                    consumer.seekToEnd(List.of(tp));
                } else {
                    consumer.seek(tp, at.offset());
                }
            } else {
                throw new IllegalArgumentException("a seek needs offset, to or timestamp");
            }
        }
    }

    private static Map<String, Object> record(ConsumerRecord<String, String> r) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("topic", r.topic());
        out.put("partition", r.partition());
        out.put("offset", r.offset());
        out.put("key", r.key());
        out.put("value", r.value());
        out.put("timestamp", r.timestamp());
        return out;
    }

    // --- group members, each polling in a thread of its own -------------------------------

    /** A consumer of a group in its own thread; the only thread that touches it. */
    private static final class Member implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final boolean commit;
        final List<Object> events = new ArrayList<>();
        final List<Object> records = new ArrayList<>();
        final Set<TopicPartition> owned = new HashSet<>();
        volatile boolean leaving;
        volatile int generation = -1;
        volatile String memberId = "";
        volatile String failure;
        final Thread thread;

        Member(String name, Properties props, List<String> topics, boolean commit) {
            this.name = name;
            this.commit = commit;
            this.consumer = new KafkaConsumer<>(
                props, new StringDeserializer(), new StringDeserializer());
            this.thread = new Thread(() -> loop(topics), "member-" + name);
        }

        private void loop(List<String> topics) {
            try {
                consumer.subscribe(topics, this);
                while (!leaving) {
                    List<Object> batch = new ArrayList<>();
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                        batch.add(record(r));
                    }
                    if (!batch.isEmpty() && commit) {
                        consumer.commitSync();
                    }
                    synchronized (this) {
                        records.addAll(batch);
                        generation = consumer.groupMetadata().generationId();
                        memberId = consumer.groupMetadata().memberId();
                    }
                }
            } catch (Exception e) {
                failure = e.toString();
            } finally {
                consumer.close(CloseOptions.timeout(Duration.ofSeconds(30)));
            }
        }

        private synchronized void event(String kind, Collection<TopicPartition> partitions) {
            List<Integer> numbers = new ArrayList<>();
            for (TopicPartition tp : partitions) {
                numbers.add(tp.partition());
            }
            numbers.sort(null);
            if (kind.equals("assigned")) {
                owned.addAll(partitions);
            } else {
                owned.removeAll(partitions);
            }
            generation = consumer.groupMetadata().generationId();
            memberId = consumer.groupMetadata().memberId();
            events.add(List.of(kind, numbers, generation));
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

        synchronized Map<String, Object> state() {
            List<Integer> numbers = new ArrayList<>();
            for (TopicPartition tp : owned) {
                numbers.add(tp.partition());
            }
            numbers.sort(null);
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("name", name);
            out.put("member_id", memberId);
            out.put("generation", generation);
            out.put("owned", numbers);
            out.put("events", new ArrayList<>(events));
            out.put("records", records.size());
            out.put("failure", failure);
            return out;
        }
    }

    private Object join(Map<String, Object> step) {
        String name = (String) step.get("name");
        Member member = new Member(name, config(step), (List<String>) step.get("subscribe"),
            Boolean.TRUE.equals(step.get("commit")));
        if (members.putIfAbsent(name, member) != null) {
            throw new IllegalArgumentException("a member " + name + " is in the scenario");
        }
        member.thread.start();
        return Map.of("name", name);
    }

    private List<Member> named(Map<String, Object> step) {
        List<Member> found = new ArrayList<>();
        for (String name : (List<String>) step.get("names")) {
            Member m = members.get(name);
            if (m == null) {
                throw new IllegalArgumentException("no member " + name);
            }
            found.add(m);
        }
        return found;
    }

    /** Until the members own all `partitions` between them, each one partition once. */
    private Object awaitGroup(Map<String, Object> step) throws Exception {
        List<Member> group = named(step);
        int partitions = integer(step, "partitions", 0);
        long deadline = System.currentTimeMillis() + integer(step, "timeout_ms", (int) WAIT_MS);
        while (true) {
            int total = 0;
            Set<Integer> union = new HashSet<>();
            boolean everyoneOwns = true;
            for (Member m : group) {
                List<Integer> owned = (List<Integer>) m.state().get("owned");
                total += owned.size();
                union.addAll(owned);
                everyoneOwns &= !owned.isEmpty() || group.size() > partitions;
                if (m.failure != null) {
                    throw new IllegalStateException(m.name + " failed: " + m.failure);
                }
            }
            if (total == partitions && union.size() == partitions && everyoneOwns) {
                break;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("the group did not settle: " + states(group));
            }
            Thread.sleep(50);
        }
        return states(group);
    }

    private Object awaitRecords(Map<String, Object> step) throws Exception {
        List<Member> group = named(step);
        int count = integer(step, "count", 0);
        long deadline = System.currentTimeMillis() + integer(step, "timeout_ms", (int) WAIT_MS);
        while (true) {
            int total = 0;
            for (Member m : group) {
                synchronized (m) {
                    total += m.records.size();
                }
            }
            if (total >= count) {
                break;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException(
                    "read " + total + " of " + count + ": " + states(group));
            }
            Thread.sleep(50);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (Member m : group) {
            synchronized (m) {
                out.put(m.name, new ArrayList<>(m.records));
            }
        }
        return out;
    }

    private static List<Object> states(List<Member> group) {
        List<Object> out = new ArrayList<>();
        for (Member m : group) {
            out.add(m.state());
        }
        return out;
    }

    private Object leave(Map<String, Object> step) throws Exception {
        List<Object> out = new ArrayList<>();
        for (Member m : named(step)) {
            m.leaving = true;
            m.thread.join(WAIT_MS);
            members.remove(m.name);
            out.add(m.state());
        }
        return out;
    }

    private void closeAll() throws Exception {
        for (Member m : members.values()) {
            m.leaving = true;
        }
        for (Member m : members.values()) {
            m.thread.join(WAIT_MS);
        }
        if (admin != null) {
            admin.close(Duration.ofSeconds(30));
        }
    }

    // --- Admin ----------------------------------------------------------------------------

    /** A checked exception from a lambda, unwrapped again by run(). */
    private static final class RuntimeWrapper extends RuntimeException {
        RuntimeWrapper(Throwable cause) {
            super(cause);
        }
    }

    private static <T> T get(org.apache.kafka.common.KafkaFuture<T> future) throws Exception {
        return future.get(WAIT_MS, TimeUnit.MILLISECONDS);
    }

    private static TopicPartition partition(Object value) {
        List<Object> tp = (List<Object>) value;
        return new TopicPartition((String) tp.get(0), (Integer) tp.get(1));
    }

    private static Map<String, Object> node(Node n) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("id", n.id());
        out.put("host", n.host());
        out.put("port", n.port());
        out.put("rack", n.rack());
        return out;
    }

    private Object admin(Map<String, Object> step) throws Exception {
        if (admin == null) {
            admin = Admin.create(config(step));
        }
        String action = (String) step.get("action");
        switch (action) {
            case "create_topics": {
                List<NewTopic> topics = new ArrayList<>();
                for (Map<String, Object> t : (List<Map<String, Object>>) step.get("topics")) {
                    NewTopic topic = new NewTopic((String) t.get("name"),
                        Optional.ofNullable((Integer) t.get("partitions")),
                        Optional.ofNullable(t.get("replication") == null ? null
                            : ((Number) t.get("replication")).shortValue()));
                    if (t.get("configs") != null) {
                        topic.configs((Map<String, String>) t.get("configs"));
                    }
                    topics.add(topic);
                }
                get(admin.createTopics(topics).all());
                return Map.of("created", topics.size());
            }
            case "list_topics":
                return new TreeMap<>(Map.of("names", new java.util.TreeSet<>(
                    get(admin.listTopics().names()))));
            case "describe_topics": {
                Map<String, TopicDescription> found = get(admin.describeTopics(
                    (List<String>) step.get("names")).allTopicNames());
                Map<String, Object> out = new TreeMap<>();
                for (TopicDescription d : found.values()) {
                    List<Object> parts = new ArrayList<>();
                    for (TopicPartitionInfo p : d.partitions()) {
                        Map<String, Object> one = new LinkedHashMap<>();
                        one.put("partition", p.partition());
                        one.put("leader", p.leader() == null ? -1 : p.leader().id());
                        one.put("replicas", p.replicas().stream().map(Node::id).toList());
                        one.put("isr", p.isr().stream().map(Node::id).toList());
                        parts.add(one);
                    }
                    out.put(d.name(), Map.of("internal", d.isInternal(),
                        "topic_id", String.valueOf(d.topicId()), "partitions", parts));
                }
                return out;
            }
            case "delete_topics":
                get(admin.deleteTopics((List<String>) step.get("names")).all());
                return Map.of("deleted", step.get("names"));
            case "create_partitions": {
                Map<String, NewPartitions> counts = new LinkedHashMap<>();
                for (Map.Entry<String, Object> e
                        : ((Map<String, Object>) step.get("counts")).entrySet()) {
                    counts.put(e.getKey(),
                        NewPartitions.increaseTo(((Number) e.getValue()).intValue()));
                }
                get(admin.createPartitions(counts).all());
                return Map.of("increased", counts.keySet());
            }
            case "describe_configs": {
                ConfigResource resource = new ConfigResource(
                    ConfigResource.Type.valueOf(((String) step.get("type")).toUpperCase()),
                    (String) step.get("name"));
                Config config = get(admin.describeConfigs(List.of(resource)).all())
                    .get(resource);
                Map<String, Object> out = new TreeMap<>();
                for (ConfigEntry e : config.entries()) {
                    out.put(e.name(), List.of(String.valueOf(e.value()),
                        e.source().name(), e.isReadOnly(), e.isSensitive()));
                }
                return out;
            }
            case "incremental_alter_configs": {
                ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC,
                    (String) step.get("name"));
                List<AlterConfigOp> ops = new ArrayList<>();
                for (Map.Entry<String, Object> e
                        : ((Map<String, Object>) step.get("set")).entrySet()) {
                    ops.add(new AlterConfigOp(new ConfigEntry(e.getKey(),
                        String.valueOf(e.getValue())), AlterConfigOp.OpType.SET));
                }
                get(admin.incrementalAlterConfigs(Map.of(resource, ops)).all());
                return Map.of("altered", step.get("name"));
            }
            case "list_groups": {
                List<Object> out = new ArrayList<>();
                for (GroupListing g : get(admin.listGroups(
                        ListGroupsOptions.forConsumerGroups()).all())) {
                    out.add(List.of(g.groupId(), g.protocol(),
                        String.valueOf(g.groupState().orElse(null)),
                        String.valueOf(g.type().orElse(null))));
                }
                return out;
            }
            case "describe_groups": {
                Map<String, ConsumerGroupDescription> found = get(
                    admin.describeConsumerGroups((List<String>) step.get("names")).all());
                Map<String, Object> out = new TreeMap<>();
                for (ConsumerGroupDescription d : found.values()) {
                    List<Object> ms = new ArrayList<>();
                    for (MemberDescription m : d.members()) {
                        Map<String, Object> one = new LinkedHashMap<>();
                        one.put("member_id", m.consumerId());
                        one.put("instance_id", m.groupInstanceId().orElse(null));
                        one.put("client_id", m.clientId());
                        one.put("partitions", m.assignment().topicPartitions().stream()
                            .map(TopicPartition::toString).sorted().toList());
                        ms.add(one);
                    }
                    Map<String, Object> g = new LinkedHashMap<>();
                    g.put("state", d.groupState().toString());
                    g.put("assignor", d.partitionAssignor());
                    g.put("type", d.type().toString());
                    g.put("coordinator", d.coordinator().id());
                    g.put("members", ms);
                    out.put(d.groupId(), g);
                }
                return out;
            }
            case "delete_groups":
                get(admin.deleteConsumerGroups((List<String>) step.get("names")).all());
                return Map.of("deleted", step.get("names"));
            case "list_group_offsets": {
                Map<TopicPartition, OffsetAndMetadata> found = get(admin
                    .listConsumerGroupOffsets((String) step.get("group"))
                    .partitionsToOffsetAndMetadata());
                Map<String, Object> out = new TreeMap<>();
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e : found.entrySet()) {
                    out.put(e.getKey().toString(),
                        List.of(e.getValue().offset(), e.getValue().metadata()));
                }
                return out;
            }
            case "alter_group_offsets": {
                Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
                for (List<Object> o : (List<List<Object>>) step.get("offsets")) {
                    offsets.put(new TopicPartition((String) o.get(0), (Integer) o.get(1)),
                        new OffsetAndMetadata(((Number) o.get(2)).longValue()));
                }
                get(admin.alterConsumerGroupOffsets((String) step.get("group"), offsets).all());
                return Map.of("altered", offsets.size());
            }
            case "delete_group_offsets": {
                Set<TopicPartition> tps = new HashSet<>();
                for (Object tp : (List<Object>) step.get("partitions")) {
                    tps.add(partition(tp));
                }
                get(admin.deleteConsumerGroupOffsets((String) step.get("group"), tps).all());
                return Map.of("deleted", tps.size());
            }
            case "list_offsets": {
                Map<TopicPartition, OffsetSpec> specs = new LinkedHashMap<>();
                for (List<Object> o : (List<List<Object>>) step.get("partitions")) {
                    String spec = (String) o.get(2);
                    specs.put(new TopicPartition((String) o.get(0), (Integer) o.get(1)),
                        spec.equals("earliest") ? OffsetSpec.earliest()
                            : spec.equals("latest") ? OffsetSpec.latest()
                            : spec.equals("max_timestamp") ? OffsetSpec.maxTimestamp()
                            : OffsetSpec.forTimestamp(Long.parseLong(spec)));
                }
                Map<String, Object> out = new TreeMap<>();
                for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e
                        : get(admin.listOffsets(specs).all()).entrySet()) {
                    out.put(e.getKey().toString(), e.getValue().offset());
                }
                return out;
            }
            case "describe_cluster": {
                DescribeClusterResult r = admin.describeCluster();
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("cluster_id", get(r.clusterId()));
                Node controller = get(r.controller());
                out.put("controller", controller == null ? null : controller.id());
                List<Object> nodes = new ArrayList<>();
                for (Node n : get(r.nodes())) {
                    nodes.add(node(n));
                }
                out.put("nodes", nodes);
                return out;
            }
            case "describe_quorum": {
                QuorumInfo q = get(admin.describeMetadataQuorum().quorumInfo());
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("leader_id", q.leaderId());
                out.put("leader_epoch", q.leaderEpoch());
                out.put("high_watermark", q.highWatermark());
                out.put("voters", replicas(q.voters()));
                out.put("observers", replicas(q.observers()));
                return out;
            }
            case "alter_reassignments": {
                Map<TopicPartition, Optional<NewPartitionReassignment>> moves =
                    new LinkedHashMap<>();
                for (List<Object> m : (List<List<Object>>) step.get("moves")) {
                    moves.put(new TopicPartition((String) m.get(0), (Integer) m.get(1)),
                        Optional.of(new NewPartitionReassignment((List<Integer>) m.get(2))));
                }
                get(admin.alterPartitionReassignments(moves).all());
                return Map.of("moving", moves.size());
            }
            case "list_reassignments": {
                Map<String, Object> out = new TreeMap<>();
                for (Map.Entry<TopicPartition, PartitionReassignment> e
                        : get(admin.listPartitionReassignments().reassignments()).entrySet()) {
                    out.put(e.getKey().toString(), Map.of(
                        "replicas", e.getValue().replicas(),
                        "adding", e.getValue().addingReplicas(),
                        "removing", e.getValue().removingReplicas()));
                }
                return out;
            }
            case "unregister_broker": {
                int id = (Integer) step.get("broker_id");
                get(admin.unregisterBroker(id).all());
                return id;
            }
            case "elect_leaders": {
                Set<TopicPartition> tps = new HashSet<>();
                for (Object tp : (List<Object>) step.get("partitions")) {
                    tps.add(partition(tp));
                }
                ElectionType type = ElectionType.valueOf(
                    ((String) step.getOrDefault("type", "preferred")).toUpperCase());
                Map<String, Object> out = new TreeMap<>();
                for (Map.Entry<TopicPartition, Optional<Throwable>> e
                        : get(admin.electLeaders(type, tps).partitions()).entrySet()) {
                    out.put(e.getKey().toString(), e.getValue()
                        .map(t -> t.getClass().getSimpleName()).orElse(null));
                }
                return out;
            }
            case "describe_log_dirs": {
                // broker -> log dir -> its error, volume bytes and replicas
                // ("topic-partition": [size, offset lag, is future]).
                Map<String, Object> out = new LinkedHashMap<>();
                for (Map.Entry<Integer, Map<String, LogDirDescription>> b : get(
                        admin.describeLogDirs((List<Integer>) step.get("brokers"))
                            .allDescriptions()).entrySet()) {
                    Map<String, Object> dirs = new LinkedHashMap<>();
                    for (Map.Entry<String, LogDirDescription> d : b.getValue().entrySet()) {
                        LogDirDescription description = d.getValue();
                        Map<String, Object> dir = new LinkedHashMap<>();
                        dir.put("error", description.error() == null
                            ? null : description.error().getClass().getSimpleName());
                        dir.put("total_bytes", description.totalBytes().isPresent()
                            ? description.totalBytes().getAsLong() : null);
                        dir.put("usable_bytes", description.usableBytes().isPresent()
                            ? description.usableBytes().getAsLong() : null);
                        Map<String, Object> replicas = new TreeMap<>();
                        for (Map.Entry<TopicPartition, ReplicaInfo> r
                                : description.replicaInfos().entrySet()) {
                            replicas.put(r.getKey().toString(), List.of(
                                r.getValue().size(), r.getValue().offsetLag(),
                                r.getValue().isFuture()));
                        }
                        dir.put("replicas", replicas);
                        dirs.put(d.getKey(), dir);
                    }
                    out.put(String.valueOf(b.getKey()), dirs);
                }
                return out;
            }
            case "delete_records": {
                Map<TopicPartition, RecordsToDelete> before = new LinkedHashMap<>();
                for (List<Object> o : (List<List<Object>>) step.get("offsets")) {
                    before.put(new TopicPartition((String) o.get(0), (Integer) o.get(1)),
                        RecordsToDelete.beforeOffset(((Number) o.get(2)).longValue()));
                }
                get(admin.deleteRecords(before).all());
                return Map.of("deleted", before.size());
            }
            case "describe_features":
                return get(admin.describeFeatures().featureMetadata())
                    .finalizedFeatures().keySet();
            case "describe_producers": {
                List<TopicPartition> tps = new ArrayList<>();
                for (Object tp : (List<Object>) step.get("partitions")) {
                    tps.add(partition(tp));
                }
                return get(admin.describeProducers(tps).all()).size();
            }
            case "list_transactions":
                return get(admin.listTransactions().all()).size();
            case "describe_transactions": {
                String id = (String) step.get("id");
                var d = get(admin.describeTransactions(List.of(id)).description(id));
                return Map.of("state", d.state().toString(), "coordinator", d.coordinatorId(),
                    "partitions", d.topicPartitions().size());
            }
            case "describe_acls":
                return get(admin.describeAcls(
                    org.apache.kafka.common.acl.AclBindingFilter.ANY).values()).size();
            case "describe_client_quotas":
                return get(admin.describeClientQuotas(
                    org.apache.kafka.common.quota.ClientQuotaFilter.all()).entities()).size();
            case "describe_user_scram_credentials":
                return get(admin.describeUserScramCredentials().all()).size();
            default:
                throw new IllegalArgumentException("unknown admin action " + action);
        }
    }

    private static List<Object> replicas(List<QuorumInfo.ReplicaState> states) {
        List<Object> out = new ArrayList<>();
        for (QuorumInfo.ReplicaState s : states) {
            out.add(List.of(s.replicaId(), s.logEndOffset()));
        }
        return out;
    }
}
