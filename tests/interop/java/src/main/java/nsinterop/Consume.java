package nsinterop;

import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * A real RocketMQ push consumer (of the version the suite runs): subscribes GROUP to TOPIC from the
 * first offset and waits until it has received every body PREFIX-0 ..
 * PREFIX-(COUNT-1). Prints GOT lines (body, queue, the broker that served the
 * pull is not exposed, so the store host), then "RECEIVED n of COUNT"; exits
 * 0 only if all arrived within TIMEOUT_S. SLOW_MS > 0 makes it take one
 * message at a time and sleep that long per message (so that a scenario can
 * change the cluster while it reads). With GATE_FILE and PAUSE_AFTER, once
 * PAUSE_AFTER bodies have arrived the listener waits while GATE_FILE exists
 * (the scenario changes the cluster, then removes the file).
 *
 * usage: Consume NAMESRV TOPIC GROUP PREFIX COUNT TIMEOUT_S [SLOW_MS [GATE_FILE PAUSE_AFTER]]
 */
public final class Consume {
    public static void main(String[] args) throws Exception {
        String ns = args[0], topic = args[1], group = args[2], prefix = args[3];
        int count = Integer.parseInt(args[4]);
        long timeoutMs = Long.parseLong(args[5]) * 1000;
        long slow = args.length > 6 ? Long.parseLong(args[6]) : 0;
        java.nio.file.Path gate = args.length > 8 ? java.nio.file.Paths.get(args[7]) : null;
        int pauseAfter = args.length > 8 ? Integer.parseInt(args[8]) : 0;

        Set<String> got = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(ns);
        c.setInstanceName("consumer-" + group);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPollNameServerInterval(1000);
        c.setHeartbeatBrokerInterval(1000);
        if (slow > 0) {
            c.setPullBatchSize(1);
            c.setPullThresholdForQueue(1);
            c.setConsumeMessageBatchMaxSize(1);
            c.setConsumeThreadMin(1);
            c.setConsumeThreadMax(1);
        }
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                if (body.startsWith(prefix + "-") && got.add(body)) {
                    System.out.printf("GOT %s queue=%d offset=%d storeHost=%s%n", body, m.getQueueId(),
                        m.getQueueOffset(), m.getStoreHost());
                    System.out.flush();
                }
            }
            try {
                if (slow > 0) {
                    Thread.sleep(slow);
                }
                while (gate != null && got.size() >= pauseAfter && java.nio.file.Files.exists(gate)) {
                    Thread.sleep(100);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        long end = System.currentTimeMillis() + timeoutMs;
        while (got.size() < count && System.currentTimeMillis() < end) {
            Thread.sleep(100);
        }
        System.out.printf("RECEIVED %d of %d%n", got.size(), count);
        System.out.flush();
        c.shutdown();
        System.exit(got.size() >= count ? 0 : 1);
    }
}
