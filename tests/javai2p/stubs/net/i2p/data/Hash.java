package net.i2p.data;
import java.io.*;
/** garlicfarm verifier STUB of Hash: 32-byte SimpleDataStructure. */
public class Hash extends SimpleDataStructure {
    public final static int HASH_LENGTH = 32;
    public Hash() { super(); }
    public Hash(byte[] data) { super(data); }
    public int length() { return HASH_LENGTH; }
    public static Hash create(InputStream in) throws IOException {
        byte[] b = new byte[HASH_LENGTH];
        DataHelper.read(in, b);
        return new Hash(b);
    }
    public String toBase32() { return Base32.encode(_data) + ".b32.i2p"; }
}
