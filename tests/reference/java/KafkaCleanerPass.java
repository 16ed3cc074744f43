import java.io.File;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Supplier;

import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.Cleaner;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogToClean;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.SkimpyOffsetMap;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.utils.Throttler;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/**
 * One pass of Kafka's own log cleaner over a partition directory, at a given time.
 *
 * <p>Arguments: the directory, the time in ms, the first dirty offset, segment.bytes and
 * delete.retention.ms. The log is opened as after a clean shutdown (its indexes and
 * producer snapshot trusted), the pass cleans up to the active segment
 * ({@code Cleaner.doClean}), and the log is closed; the files are left for the test to
 * read. The clock is fixed at the given time, so that producers are not expired and
 * delete horizons are what the test expects.
 */
public final class KafkaCleanerPass {
    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        long now = Long.parseLong(args[1]);
        long firstDirty = Long.parseLong(args[2]);
        Properties props = new Properties();
        props.put("cleanup.policy", "compact");
        props.put("segment.bytes", args[3]);
        props.put("delete.retention.ms", args[4]);
        props.put("file.delete.delay.ms", "0");
        props.put("min.cleanable.dirty.ratio", "0.01");
        LogConfig config = new LogConfig(props);
        Time time = new FixedTime(now);
        KafkaScheduler scheduler = new KafkaScheduler(1);
        scheduler.startup();
        UnifiedLog log = UnifiedLog.create(dir, config, 0L, 0L, scheduler, new BrokerTopicStats(),
            time, 60_000, new ProducerStateManagerConfig(86_400_000, false), 600_000,
            new LogDirFailureChannel(1), true, Optional.empty());
        long uncleanable = log.activeSegment().baseOffset();
        Cleaner cleaner = new Cleaner(0, new SkimpyOffsetMap(4 << 20), 1 << 20, 16 << 20, 0.9,
            new Throttler(Double.MAX_VALUE, Long.MAX_VALUE, "cleaner-io", "bytes", time), time,
            tp -> { });
        cleaner.doClean(new LogToClean(log, firstDirty, uncleanable, false), now);
        log.close();
        scheduler.shutdown();
        System.out.println(uncleanable);
    }

    /** A clock that does not move. */
    private static final class FixedTime implements Time {
        private final long now;

        FixedTime(long now) {
            this.now = now;
        }

        @Override
        public long milliseconds() {
            return now;
        }

        @Override
        public long nanoseconds() {
            return now * 1_000_000L;
        }

        @Override
        public void sleep(long ms) {
        }

        @Override
        public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
        }
    }
}
