/* AclInterop.java - our signatures against the real RocketMQ 5.3.3 Java
 * classes (rocketmq-client's AclClientRPCHook, rocketmq-tools'
 * DefaultMQAdminExt, rocketmq-broker's BrokerStartup).
 *
 *   java -cp 'LIB/*' AclInterop.java vectors
 *       prints "case signature" for the fixed inputs of tests/unit/test_auth.c
 *       (cases A-C), signed by the real AclClientRPCHook
 *   java -cp 'LIB/*' AclInterop.java live NSADDR STOREDIR
 *       against a namesrvd with authMode=all and the users of run.sh:
 *       a producer with the ACL hook resolves a route, one without is
 *       refused, an admin (DefaultMQAdminExt, what mqadmin runs) writes KV
 *       config and reads the settings, a client may not; a real broker with
 *       its inner-client credentials registers, one under a name it is not
 *       granted is refused. Prints one "ok|FAIL <what>" line per check. */
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import java.util.Properties;

import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.BrokerStartup;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.header.namesrv.GetRouteInfoRequestHeader;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class AclInterop {
    static int failures = 0;

    static void check(boolean ok, String what) {
        System.out.println((ok ? "ok   " : "FAIL ") + what);
        if (!ok)
            failures++;
    }

    static String sign(RemotingCommand cmd, SessionCredentials c) {
        new AclClientRPCHook(c).doBeforeRequest("127.0.0.1:9876", cmd);
        return cmd.getExtFields().get("Signature");
    }

    static void vectors() {
        GetRouteInfoRequestHeader h = new GetRouteInfoRequestHeader();
        h.setTopic("TopicTest");
        RemotingCommand a = RemotingCommand.createRequestCommand(105, h);
        String sa = sign(a, new SessionCredentials("rocketmq2", "12345678"));
        System.out.println("A " + sa + " fields=" + new java.util.TreeMap<>(a.getExtFields()));

        RemotingCommand b = RemotingCommand.createRequestCommand(106, null);
        b.addExtField("clusterName", "DefaultCluster");
        System.out.println("B " + sign(b, new SessionCredentials("ak", "sk-secret", "tok")));

        RemotingCommand c = RemotingCommand.createRequestCommand(103, null);
        c.addExtField("clusterName", "DefaultCluster");
        c.addExtField("brokerName", "broker-a");
        c.addExtField("brokerAddr", "10.0.0.1:10911");
        c.setBody("{\"topicConfigTable\":{}}".getBytes(StandardCharsets.UTF_8));
        System.out.println("C " + sign(c, new SessionCredentials("ak1", "brokersecret")));
    }

    static BrokerController broker(String ns, String name, File dir, int port) throws Exception {
        File conf = new File(dir, name + ".conf");
        Properties p = new Properties();
        p.setProperty("rocketmqHome", dir.getPath());
        p.setProperty("brokerClusterName", "DefaultCluster");
        p.setProperty("brokerName", name);
        p.setProperty("brokerId", "0");
        p.setProperty("namesrvAddr", ns);
        p.setProperty("brokerIP1", "127.0.0.1");
        p.setProperty("listenPort", String.valueOf(port));
        p.setProperty("storePathRootDir", new File(dir, name).getPath());
        p.setProperty("storePathCommitLog", new File(dir, name + "/commitlog").getPath());
        p.setProperty("mappedFileSizeCommitLog", String.valueOf(4 * 1024 * 1024));
        p.setProperty("mappedFileSizeConsumeQueue", String.valueOf(60000));
        p.setProperty("enableControllerMode", "false");
        // 5.3 keeps the inner-client user in its own metadata store too
        p.setProperty("authenticationMetadataProvider",
            "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider");
        p.setProperty("innerClientAuthenticationCredentials",
            "{\"accessKey\":\"brk1\",\"secretKey\":\"brokersecret\"}");
        try (var out = Files.newOutputStream(conf.toPath())) {
            p.store(out, null);
        }
        BrokerController bc = BrokerStartup.createBrokerController(new String[] {"-c", conf.getPath()});
        bc.start();
        return bc;
    }

    static boolean refused(Exception e) {
        String s = String.valueOf(e);
        for (Throwable t = e; t != null; t = t.getCause())
            s += " " + t;
        return s.contains("CODE: 16");
    }

    static void live(String ns, File dir) {
        try {
            liveChecks(ns, dir);
        } catch (Exception e) {
            check(false, "live run stopped: " + e);
        }
    }

    static void liveChecks(String ns, File dir) throws Exception {
        SessionCredentials admin = new SessionCredentials("admin1", "adminsecret");
        SessionCredentials client = new SessionCredentials("cli1", "clientsecret");
        // 1. a real 5.3.3 broker signs its registrations with its inner-client credentials
        BrokerController a = broker(ns, "broker-a", dir, 30911 + (int) (ProcessHandle.current().pid() % 500));
        DefaultMQAdminExt adm = new DefaultMQAdminExt(new AclClientRPCHook(admin), 5000);
        adm.setNamesrvAddr(ns);
        adm.setInstanceName("adm-" + System.nanoTime());
        adm.start();
        var info = adm.examineBrokerClusterInfo();
        for (int i = 0; i < 120 && !info.getBrokerAddrTable().containsKey("broker-a"); i++) {
            Thread.sleep(500); // the broker's first registration follows its start
            info = adm.examineBrokerClusterInfo();
        }
        check(info.getBrokerAddrTable().containsKey("broker-a"),
            "5.3.3 broker-a registered with its credentials: " + info.getBrokerAddrTable().keySet());
        // 2. a producer with the ACL hook resolves a route under authMode=all
        DefaultMQProducer prod = new DefaultMQProducer("pg", new AclClientRPCHook(client));
        prod.setNamesrvAddr(ns);
        prod.setInstanceName("prod-" + System.nanoTime());
        prod.start();
        List<MessageQueue> mqs = List.of();
        for (int i = 0; i < 60 && mqs.isEmpty(); i++) {
            try {
                mqs = prod.fetchPublishMessageQueues("TBW102");
            } catch (Exception e) {
                Thread.sleep(500);
            }
        }
        check(!mqs.isEmpty() && mqs.get(0).getBrokerName().equals("broker-a"),
            "producer with AclClientRPCHook resolved TBW102: " + mqs.size() + " queues");
        prod.shutdown();
        DefaultMQProducer anon = new DefaultMQProducer("pg2");
        anon.setNamesrvAddr(ns);
        anon.setInstanceName("anon-" + System.nanoTime());
        anon.start();
        try {
            anon.fetchPublishMessageQueues("TBW102");
            check(false, "producer without credentials refused");
        } catch (Exception e) {
            // the client turns the NO_PERMISSION into "no route"; run.sh checks
            // that namesrvd recorded the refusal
            check(refused(e) || String.valueOf(e).contains("Can not find Message Queue"),
                "producer without credentials gets no route: " + e.getMessage().split("\n")[0]);
        }
        anon.shutdown();
        // 3. mqadmin's admin API with credentials: KV config and settings
        adm.createAndUpdateKvConfig("ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4");
        check("broker-a:4".equals(adm.getKVConfig("ORDER_TOPIC_CONFIG", "TopicA")),
            "DefaultMQAdminExt (admin1) updateKvConfig + getKVConfig");
        var cfg = adm.getNameServerConfig(List.of(ns));
        check(cfg.size() == 1 && "all".equals(cfg.values().iterator().next().getProperty("authMode")),
            "DefaultMQAdminExt (admin1) getNamesrvConfig: authMode=all");
        Properties up = new Properties();
        up.setProperty("orderMessageEnable", "true");
        adm.updateNameServerConfig(up, List.of(ns));
        check(true, "DefaultMQAdminExt (admin1) updateNamesrvConfig");
        DefaultMQAdminExt weak = new DefaultMQAdminExt(new AclClientRPCHook(client), 5000);
        weak.setNamesrvAddr(ns);
        weak.setInstanceName("weak-" + System.nanoTime());
        weak.start();
        try {
            weak.createAndUpdateKvConfig("ORDER_TOPIC_CONFIG", "TopicB", "x");
            check(false, "client may not write KV config");
        } catch (Exception e) {
            check(refused(e), "client may not write KV config: " + e.getMessage().split("\n")[0]);
        }
        try {
            weak.updateNameServerConfig(up, List.of(ns));
            check(false, "client may not update settings");
        } catch (Exception e) {
            check(refused(e), "client may not update settings: " + e.getMessage().split("\n")[0]);
        }
        weak.shutdown();
        // 3b. mqadmin itself (MQAdminStartup) with $ROCKETMQ_HOME/conf/tools.yml (run.sh
        // writes admin1's keys there): updateKvConfig, then read back
        org.apache.rocketmq.tools.command.MQAdminStartup.main0(new String[] {"updateKvConfig",
            "-s", "ORDER_TOPIC_CONFIG", "-k", "TopicM", "-v", "broker-a:8", "-n", ns}, null);
        String got = null;
        try {
            got = adm.getKVConfig("ORDER_TOPIC_CONFIG", "TopicM");
        } catch (Exception e) {
            got = String.valueOf(e);
        }
        check("broker-a:8".equals(got), "mqadmin updateKvConfig with conf/tools.yml credentials: " + got);
        // 4. the same credentials under a broker name not granted: refused
        BrokerController b = broker(ns, "broker-b", dir, 31911 + (int) (ProcessHandle.current().pid() % 500));
        Thread.sleep(15000); // past its first registration attempt
        info = adm.examineBrokerClusterInfo();
        check(!info.getBrokerAddrTable().containsKey("broker-b"),
            "broker-b (not granted to brk1) not registered: " + info.getBrokerAddrTable().keySet());
        adm.shutdown();
        b.shutdown();
        a.shutdown();
    }

    public static void main(String[] args) throws Exception {
        System.setProperty("rocketmq.client.logUseSlf4j", "false");
        if (args.length >= 1 && args[0].equals("vectors"))
            vectors();
        else if (args.length >= 3 && args[0].equals("live"))
            live(args[1], new File(args[2]));
        else
            System.err.println("usage: AclInterop vectors | live NSADDR DIR");
        System.out.println(failures == 0 ? "all checks passed" : failures + " checks failed");
        System.exit(failures == 0 ? 0 : 1);
    }
}
