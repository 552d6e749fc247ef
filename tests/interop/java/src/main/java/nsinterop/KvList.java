package nsinterop;

import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Asks one NameServer for a KV namespace the way RocketMQ's admin tools do
 * (DefaultMQAdminExt.getKVListByNamespace, GET_KVLIST_BY_NAMESPACE) and
 * prints what the Java client made of the answer, with the time it took:
 *
 *   KVLIST n=N ms=T                      the list arrived (N keys)
 *   REFUSED code=C ms=T remark           the server answered an error
 *   FAILED ms=T class: message           no answer the client could read
 *
 * Exits 0 in every case: the scenario judges the line.
 *
 * usage: KvList NAMESRV NAMESPACE TIMEOUT_MS
 */
public final class KvList {
    public static void main(String[] args) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt(Long.parseLong(args[2]));
        admin.setNamesrvAddr(args[0]);
        admin.setInstanceName("kv-list");
        admin.start();
        long t0 = System.currentTimeMillis();
        try {
            var table = admin.getKVListByNamespace(args[1]).getTable();
            System.out.printf("KVLIST n=%d ms=%d%n", table.size(), System.currentTimeMillis() - t0);
        } catch (MQClientException e) {
            System.out.printf("REFUSED code=%d ms=%d %s%n", e.getResponseCode(),
                System.currentTimeMillis() - t0, e.getErrorMessage());
        } catch (Exception e) {
            System.out.printf("FAILED ms=%d %s: %s%n", System.currentTimeMillis() - t0,
                e.getClass().getName(), e.getMessage());
        }
        admin.shutdown();
        System.exit(0);
    }
}
