package net.i2p.util;
import java.security.SecureRandom;
/** garlicfarm verifier STUB */
public class RandomSource {
    private static final RandomSource INSTANCE = new RandomSource();
    private final SecureRandom r = new SecureRandom();
    public static RandomSource getInstance() { return INSTANCE; }
    public void nextBytes(byte[] b) { r.nextBytes(b); }
    public void nextBytes(byte[] b, int off, int len) { byte[] t = new byte[len]; r.nextBytes(t); System.arraycopy(t, 0, b, off, len); }
}
