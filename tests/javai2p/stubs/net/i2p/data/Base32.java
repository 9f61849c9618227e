package net.i2p.data;
/** garlicfarm verifier STUB: RFC 4648 Base32, lower case, no padding (as I2P's Base32.encode). */
public class Base32 {
    private static final String A = "abcdefghijklmnopqrstuvwxyz234567";
    public static String encode(byte[] b) {
        StringBuilder sb = new StringBuilder();
        int buf = 0, bits = 0;
        for (byte x : b) {
            buf = (buf << 8) | (x & 0xff); bits += 8;
            while (bits >= 5) { sb.append(A.charAt((buf >> (bits - 5)) & 31)); bits -= 5; }
        }
        if (bits > 0) sb.append(A.charAt((buf << (5 - bits)) & 31));
        return sb.toString();
    }
}
