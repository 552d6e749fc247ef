package nsinterop;

import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.remoting.RPCHook;

/**
 * The credentials our client programs sign with, from the system properties
 * nsinterop.accessKey and nsinterop.secretKey: RocketMQ's own
 * AclClientRPCHook (in rocketmq-client in 5.x, rocketmq-acl in 4.x), what applications pass to their
 * producers and consumers. Null (no signing) when they are not set.
 */
final class Creds {
    private Creds() {}

    static RPCHook hook() {
        String ak = System.getProperty("nsinterop.accessKey");
        String sk = System.getProperty("nsinterop.secretKey");
        if (ak == null || ak.isEmpty() || sk == null)
            return null;
        return new AclClientRPCHook(new SessionCredentials(ak, sk));
    }
}
