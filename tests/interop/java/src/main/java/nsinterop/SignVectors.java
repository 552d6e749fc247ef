package nsinterop;

import java.nio.charset.StandardCharsets;
import java.util.TreeMap;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * The signatures the real AclClientRPCHook (of the RocketMQ version the suite
 * runs) puts on the fixed requests of tests/unit/test_auth.c, cases A-C: one
 * line "CASE SIGNATURE" each (A also prints the signed fields). The interop
 * scenario 11_auth compares them with the values our unit test expects. The
 * route request's topic is set as the ext field its header would put there:
 * GetRouteInfoRequestHeader lives in another package in 4.x, and its other
 * fields are null, which the hook leaves out.
 */
public final class SignVectors {
    static String sign(RemotingCommand cmd, SessionCredentials c) {
        new AclClientRPCHook(c).doBeforeRequest("127.0.0.1:9876", cmd);
        return cmd.getExtFields().get("Signature");
    }

    public static void main(String[] args) {
        RemotingCommand a = RemotingCommand.createRequestCommand(105, null);
        a.addExtField("topic", "TopicTest");
        String sa = sign(a, new SessionCredentials("rocketmq2", "12345678"));
        System.out.println("A " + sa + " fields=" + new TreeMap<>(a.getExtFields()));

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
}
