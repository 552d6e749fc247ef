package nsinterop;

import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * A real RocketMQ producer (of the version the suite runs): sends COUNT messages with bodies PREFIX-i
 * (key PREFIX-i) to TOPIC, one every INTERVAL_MS, through the name servers
 * NAMESRV ("a:p;b:p"; "-": none, the client polls the address server named
 * by -Drocketmq.namesrv.domain). Prints one line per message (SENT or FAILED with the
 * reason) and a SUMMARY line; exits 0 only if every send succeeded. With
 * -Dnsinterop.accessKey=K -Dnsinterop.secretKey=S it signs (Creds).
 *
 * usage: Produce NAMESRV TOPIC PREFIX COUNT [INTERVAL_MS]
 */
public final class Produce {
    public static void main(String[] args) throws Exception {
        String ns = args[0], topic = args[1], prefix = args[2];
        int count = Integer.parseInt(args[3]);
        long interval = args.length > 4 ? Long.parseLong(args[4]) : 0;

        // signed with AclClientRPCHook when -Dnsinterop.accessKey/secretKey are set
        DefaultMQProducer p = new DefaultMQProducer("nsinterop_producer_" + prefix, Creds.hook());
        if (!ns.equals("-")) {
            p.setNamesrvAddr(ns);
        }
        p.setInstanceName("producer-" + prefix);
        p.setSendMsgTimeout(5000);
        p.setRetryTimesWhenSendFailed(2);
        p.setPollNameServerInterval(1000); // route refreshes every second
        p.start();
        int ok = 0, failed = 0;
        for (int i = 0; i < count; i++) {
            String body = prefix + "-" + i;
            Message m = new Message(topic, "tagA", body, body.getBytes(StandardCharsets.UTF_8));
            try {
                SendResult r = p.send(m);
                ok++;
                System.out.printf("SENT %d %s %s %d%n", i, r.getSendStatus(),
                    r.getMessageQueue().getBrokerName(), r.getMessageQueue().getQueueId());
            } catch (Exception e) {
                failed++;
                System.out.printf("FAILED %d %s%n", i, String.valueOf(e).replace('\n', ' '));
            }
            System.out.flush();
            if (interval > 0) {
                Thread.sleep(interval);
            }
        }
        System.out.printf("SUMMARY sent=%d failed=%d%n", ok, failed);
        p.shutdown();
        System.exit(failed == 0 ? 0 : 1);
    }
}
