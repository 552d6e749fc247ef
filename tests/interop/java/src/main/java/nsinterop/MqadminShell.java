package nsinterop;

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Runs real mqadmin commands (MQAdminStartup.main of rocketmq-tools of the version the suite runs,
 * exactly what the mqadmin script runs) one after another in one JVM, so
 * that a scenario does not pay a JVM start per command on a busy 2-core
 * machine. Reads lines "OUTFILE<TAB>arg<TAB>arg..." on stdin; runs
 * MQAdminStartup.main(args) with System.out and System.err going to OUTFILE;
 * then prints "DONE OUTFILE" on its stdout. mqadmin reports errors by
 * printing them, so the caller checks OUTFILE.
 */
public final class MqadminShell {
    public static void main(String[] args) throws Exception {
        PrintStream out = System.out, err = System.err;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t");
            String[] cmd = new String[f.length - 1];
            System.arraycopy(f, 1, cmd, 0, cmd.length);
            try (PrintStream ps = new PrintStream(new FileOutputStream(f[0], true), true, "UTF-8")) {
                System.setOut(ps);
                System.setErr(ps);
                try {
                    MQAdminStartup.main(cmd);
                } catch (Throwable t) {
                    t.printStackTrace(ps);
                } finally {
                    System.setOut(out);
                    System.setErr(err);
                }
            }
            out.println("DONE " + f[0]);
            out.flush();
        }
    }
}
