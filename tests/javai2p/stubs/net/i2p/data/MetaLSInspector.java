package net.i2p.data;

import java.io.ByteArrayOutputStream;

/**
 * garlicfarm verifier helper (our code, not I2P's): lives in net.i2p.data only to read
 * LeaseSet2's protected fields and call its protected writeBytesWithoutSig(), so the
 * verifier can show what Java re-serializes when it checks the signature.
 */
public final class MetaLSInspector {
    private MetaLSInspector() {}
    public static long published(LeaseSet2 ls) { return ls._published; }
    /** after readBytes(); note MetaLeaseSet.readBytes overwrites it with the latest lease end */
    public static long expires(LeaseSet2 ls) { return ls._expires; }
    public static int flags(LeaseSet2 ls) { return ls._flags; }
    public static long transientExpires(LeaseSet2 ls) { return ls._transientExpires; }
    public static java.util.Properties options(LeaseSet2 ls) { return ls._options; }
    /** type byte + writeBytesWithoutSig(), i.e. exactly what verifySignature() checks */
    public static byte[] signedBytes(LeaseSet2 ls) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(ls.getType());
        ls.writeBytesWithoutSig(out);
        return out.toByteArray();
    }
}
