package net.i2p.crypto;
import java.security.MessageDigest;
import net.i2p.data.Hash;
/** garlicfarm verifier STUB: SHA-256 from the JDK. */
public class SHA256Generator {
    private static final SHA256Generator INSTANCE = new SHA256Generator();
    public static SHA256Generator getInstance() { return INSTANCE; }
    public Hash calculateHash(byte[] data) { return calculateHash(data, 0, data.length); }
    public Hash calculateHash(byte[] data, int off, int len) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update(data, off, len);
            return new Hash(md.digest());
        } catch (Exception e) { throw new RuntimeException(e); }
    }
}
