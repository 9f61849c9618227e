import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Map;

import net.i2p.data.Base32;
import net.i2p.data.Lease;
import net.i2p.data.MetaLSInspector;
import net.i2p.data.MetaLease;
import net.i2p.data.MetaLeaseSet;

/**
 * garlicfarm: does Java I2P's own net.i2p.data.MetaLeaseSet accept a Meta LeaseSet2?
 *
 * usage: java VerifyMetaLS FILE...
 * Each FILE holds one MetaLeaseSet as stored in the netDb: the LS2 header first
 * (destination), no leading type byte. One line of JSON per file on stdout.
 * Exit 0 if every file parses and verifySignature() is true, else 1.
 * -Dverify.now=MS makes the (stub) clock pretend another time.
 */
public class VerifyMetaLS {
    static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String iso(long ms) { return q(java.time.Instant.ofEpochMilli(ms).toString()); }

    public static void main(String[] args) throws Exception {
        if (args.length == 0 || args[0].equals("-h") || args[0].equals("--help")) {
            System.err.println("usage: java VerifyMetaLS FILE...  (each FILE: one MetaLeaseSet, netDb layout, no type byte)");
            System.exit(args.length == 0 ? 2 : 0);
        }
        boolean allOk = true;
        for (String f : args) {
            StringBuilder o = new StringBuilder("{\"file\": ").append(q(f));
            byte[] data;
            try {
                data = Files.readAllBytes(Paths.get(f));
            } catch (Exception e) {
                System.out.println(o.append(", \"parsed\": false, \"error\": ").append(q(e.toString())).append("}"));
                allOk = false;
                continue;
            }
            o.append(", \"size\": ").append(data.length);
            MetaLeaseSet ls = new MetaLeaseSet();
            ByteArrayInputStream in = new ByteArrayInputStream(data);
            try {
                ls.readBytes(in);
            } catch (Throwable e) {
                System.out.println(o.append(", \"parsed\": false, \"error\": ").append(q(e.toString())).append("}"));
                allOk = false;
                continue;
            }
            int trailing = in.available();
            o.append(", \"parsed\": true");
            if (trailing != 0)
                o.append(", \"trailing_bytes\": ").append(trailing);
            o.append(", \"destination_b32\": ").append(q(Base32.encode(ls.getDestination().getHash().getData()) + ".b32.i2p"));
            o.append(", \"sig_type\": ").append(q(String.valueOf(ls.getDestination().getSigningPublicKey().getType())));
            long pub = MetaLSInspector.published(ls);
            o.append(", \"published\": ").append(iso(pub));
            // header expires as written in the file (offset: destination, then 4-byte published)
            int off = ls.getDestination().size() + 4;
            long hdrExp = pub + 1000L * (((data[off] & 0xff) << 8) | (data[off + 1] & 0xff));
            o.append(", \"expires_header\": ").append(iso(hdrExp));
            o.append(", \"expires_java\": ").append(iso(MetaLSInspector.expires(ls)));
            o.append(", \"flags\": ").append(MetaLSInspector.flags(ls));
            o.append(", \"offline\": ").append(ls.isOffline());
            if (ls.isOffline()) {
                o.append(", \"transient_expires\": ").append(iso(MetaLSInspector.transientExpires(ls)));
                o.append(", \"transient_sig_type\": ").append(q(String.valueOf(ls.getTransientSigningKey().getType())));
                boolean offOk;
                try { offOk = ls.verifyOfflineSignature(); } catch (Throwable t) { offOk = false; }
                o.append(", \"offline_sig_ok\": ").append(offOk);
            }
            o.append(", \"options\": {");
            boolean first = true;
            if (MetaLSInspector.options(ls) != null) {
                for (Map.Entry<Object, Object> e : MetaLSInspector.options(ls).entrySet()) {
                    if (!first) o.append(", ");
                    first = false;
                    o.append(q((String) e.getKey())).append(": ").append(q((String) e.getValue()));
                }
            }
            o.append("}");
            int n = ls.getLeaseCount();
            o.append(", \"lease_count\": ").append(n).append(", \"leases\": [");
            for (int i = 0; i < n; i++) {
                Lease l = ls.getLease(i);
                MetaLease ml = (MetaLease) l;
                if (i > 0) o.append(", ");
                o.append("{\"hash_b32\": ").append(q(Base32.encode(ml.getGateway().getData())))
                 .append(", \"type\": ").append(ml.getType())
                 .append(", \"cost\": ").append(ml.getCost())
                 .append(", \"end\": ").append(iso(ml.getEndDate().getTime()))
                 .append("}");
            }
            o.append("]");
            boolean ok;
            try {
                ok = ls.verifySignature();
            } catch (Throwable t) {
                ok = false;
                o.append(", \"verify_error\": ").append(q(t.toString()));
            }
            o.append(", \"verifySignature\": ").append(ok);
            // what Java signed-over vs what the file holds: diagnoses a false above
            try {
                byte[] javaSigned = MetaLSInspector.signedBytes(ls);
                int sigLen = ls.getSignature().length();
                byte[] fileSigned = new byte[data.length - trailing - sigLen + 1];
                fileSigned[0] = 7;
                System.arraycopy(data, 0, fileSigned, 1, fileSigned.length - 1);
                boolean same = Arrays.equals(javaSigned, fileSigned);
                o.append(", \"reserialized_equals_file\": ").append(same);
                if (!same) {
                    int d = 0;
                    while (d < Math.min(javaSigned.length, fileSigned.length) && javaSigned[d] == fileSigned[d]) d++;
                    o.append(", \"reserialized_first_diff_at\": ").append(d - 1)
                     .append(", \"reserialized_len\": ").append(javaSigned.length - 1)
                     .append(", \"file_len_without_sig\": ").append(fileSigned.length - 1);
                }
            } catch (Throwable t) {
                o.append(", \"reserialize_error\": ").append(q(t.toString()));
            }
            System.out.println(o.append("}"));
            if (!ok || trailing != 0)
                allOk = false;
        }
        System.exit(allOk ? 0 : 1);
    }
}
