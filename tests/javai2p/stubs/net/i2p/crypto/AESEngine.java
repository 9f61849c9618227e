package net.i2p.crypto;
import net.i2p.data.SessionKey;
/** garlicfarm verifier STUB: LS1 lease encryption only, never reached for LS2/Meta. */
public class AESEngine {
    public void encrypt(byte[] a, int b, byte[] c, int d, SessionKey k, byte[] iv, int len) { throw new UnsupportedOperationException("stub"); }
    public void decrypt(byte[] a, int b, byte[] c, int d, SessionKey k, byte[] iv, int len) { throw new UnsupportedOperationException("stub"); }
}
