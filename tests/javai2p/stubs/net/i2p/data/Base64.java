package net.i2p.data;
/** garlicfarm verifier STUB: I2P Base64 = standard Base64 with '-' for '+' and '~' for '/', padded. */
public class Base64 {
    public static String encode(byte[] b) { return encode(b, 0, b.length); }
    public static String encode(byte[] b, int off, int len) {
        byte[] t = new byte[len]; System.arraycopy(b, off, t, 0, len);
        return java.util.Base64.getEncoder().encodeToString(t).replace('+', '-').replace('/', '~');
    }
    public static byte[] decode(String s) {
        try { return java.util.Base64.getDecoder().decode(s.replace('-', '+').replace('~', '/')); }
        catch (IllegalArgumentException e) { return null; }
    }
}
