package nsinterop;

import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Waits until the slave's commit log has caught up with the master's
 * (commitLogMaxOffset of both brokers' runtime info, asked through the admin
 * API with the brokers' addresses from the route). Exits 0 when equal and
 * non-zero, at least 1 byte, within TIMEOUT_S, else 1.
 *
 * usage: WaitReplicated NAMESRV MASTER_ADDR SLAVE_ADDR TIMEOUT_S
 */
public final class WaitReplicated {
    public static void main(String[] args) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(args[0]);
        admin.setInstanceName("wait-replicated");
        admin.start();
        long end = System.currentTimeMillis() + Long.parseLong(args[3]) * 1000;
        String m = "?", s = "?";
        boolean ok = false;
        while (System.currentTimeMillis() < end) {
            try {
                m = offset(admin, args[1]);
                s = offset(admin, args[2]);
                if (m.equals(s) && Long.parseLong(m) > 0) {
                    ok = true;
                    break;
                }
            } catch (Exception e) {
                System.out.println("not yet: " + e);
            }
            Thread.sleep(200);
        }
        System.out.printf("master commitLogMaxOffset=%s slave commitLogMaxOffset=%s %s%n", m, s,
            ok ? "REPLICATED" : "BEHIND");
        admin.shutdown();
        System.exit(ok ? 0 : 1);
    }

    // KVTable is not named: its package differs between 4.x and 5.x
    private static String offset(DefaultMQAdminExt admin, String addr) throws Exception {
        return admin.fetchBrokerRuntimeStats(addr).getTable().get("commitLogMaxOffset");
    }
}
