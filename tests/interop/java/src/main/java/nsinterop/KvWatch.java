package nsinterop;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Reads one KV entry from each of several NameServers the way RocketMQ's
 * admin tools do (DefaultMQAdminExt.getKVConfig, GET_KV_CONFIG; one admin
 * client per server, each knowing only that address), every 10 ms, until
 * the servers show the state asked for, and then, for HOLD_MS, that they
 * keep showing it. Prints, on stdout:
 *
 *   READY                          every server answered once (the caller may write now)
 *   SEEN ADDR value=V at=EPOCH_MS  the first read on ADDR in the state asked for
 *   REACHED spread=MS value=V      every server in it; MS from the first SEEN to the last
 *   HELD ms=MS                     still so after HOLD_MS
 *   LEFT ADDR value=V after=MS     a server left the state during HOLD_MS
 *   TIMEOUT ADDR=V ...             not reached within TIMEOUT_MS: what each server held
 *
 * V is the value, or "-" for no such key (QUERY_NOT_FOUND), or "!Class" for
 * a read that failed. Exits 0 in every case: the scenario judges the lines.
 *
 * usage: KvWatch NAMESRV;NAMESRV... NAMESPACE KEY WANT TIMEOUT_MS HOLD_MS
 *   WANT  =VALUE  every server holds VALUE
 *         absent  no server holds the key
 *         same    every server holds the key with one and the same value
 */
public final class KvWatch {
    public static void main(String[] args) throws Exception {
        String[] addrs = args[0].split(";");
        String namespace = args[1], key = args[2], want = args[3];
        long timeout = Long.parseLong(args[4]), hold = Long.parseLong(args[5]);
        List<DefaultMQAdminExt> admins = new ArrayList<>();
        for (int i = 0; i < addrs.length; i++) {
            DefaultMQAdminExt a = new DefaultMQAdminExt(3000);
            a.setNamesrvAddr(addrs[i]);
            a.setInstanceName("kv-watch-" + i);
            a.start();
            admins.add(a);
        }
        String[] now = new String[addrs.length];
        long[] seen = new long[addrs.length];
        read(admins, namespace, key, now);
        System.out.println("READY");
        System.out.flush();
        long t0 = System.currentTimeMillis(), reachedAt = -1;
        String reachedValue = null;
        while (true) {
            long t = System.currentTimeMillis();
            boolean all = true;
            for (int i = 0; i < addrs.length; i++) {
                boolean in = inState(want, now[i], now[0]);
                if (in && seen[i] == 0) {
                    seen[i] = t;
                    System.out.printf("SEEN %s value=%s at=%d%n", addrs[i], now[i], t);
                }
                all &= in;
            }
            if (reachedAt < 0 && all) {
                long first = Long.MAX_VALUE, last = 0;
                for (long s : seen) {
                    first = Math.min(first, s);
                    last = Math.max(last, s);
                }
                reachedAt = t;
                reachedValue = now[0];
                System.out.printf("REACHED spread=%d value=%s%n", last - first, reachedValue);
            } else if (reachedAt >= 0) {
                for (int i = 0; i < addrs.length; i++) {
                    if (!Objects.equals(now[i], reachedValue)) {
                        System.out.printf("LEFT %s value=%s after=%d%n", addrs[i], now[i], t - reachedAt);
                        finish(admins);
                    }
                }
                if (t - reachedAt >= hold) {
                    System.out.printf("HELD ms=%d%n", t - reachedAt);
                    finish(admins);
                }
            } else if (t - t0 > timeout) {
                StringBuilder sb = new StringBuilder("TIMEOUT");
                for (int i = 0; i < addrs.length; i++) sb.append(' ').append(addrs[i]).append('=').append(now[i]);
                System.out.println(sb);
                finish(admins);
            }
            Thread.sleep(10);
            read(admins, namespace, key, now);
        }
    }

    /** whether a server holding V is in the state WANT (FIRST: the first server's value) */
    private static boolean inState(String want, String v, String first) {
        if (want.equals("absent")) return v.equals("-");
        if (want.equals("same")) return !v.equals("-") && !v.startsWith("!") && v.equals(first);
        return v.equals(want.substring(1));
    }

    private static void read(List<DefaultMQAdminExt> admins, String ns, String key, String[] into) {
        for (int i = 0; i < admins.size(); i++) {
            try {
                into[i] = admins.get(i).getKVConfig(ns, key);
            } catch (MQClientException e) {
                // QUERY_NOT_FOUND (22): no such key on that server
                into[i] = e.getResponseCode() == 22 ? "-" : "!code" + e.getResponseCode();
            } catch (Exception e) {
                into[i] = "!" + e.getClass().getSimpleName();
            }
        }
    }

    private static void finish(List<DefaultMQAdminExt> admins) {
        System.out.flush();
        for (DefaultMQAdminExt a : admins) a.shutdown();
        System.exit(0);
    }
}
