package net.i2p.data;
import java.io.*;
import net.i2p.crypto.EncType;
/** garlicfarm verifier STUB of PublicKey: typed, default ElGamal 256 bytes; unknown types keep their length. */
public class PublicKey extends SimpleDataStructure {
    public final static int KEYSIZE_BYTES = 256;
    private final EncType _type;
    private final int _unknownTypeCode;
    public PublicKey() { _type = EncType.ELGAMAL_2048; _unknownTypeCode = 0; }
    public PublicKey(EncType type, byte[] data) { _type = type; _unknownTypeCode = 0; setData(data); }
    public PublicKey(int typeCode, byte[] data) { _type = null; _unknownTypeCode = typeCode; _data = data; }
    public static PublicKey create(InputStream in) throws IOException {
        byte[] b = new byte[KEYSIZE_BYTES];
        DataHelper.read(in, b);
        return new PublicKey(EncType.ELGAMAL_2048, b);
    }
    public static PublicKey create(byte[] data, int off) {
        byte[] b = new byte[KEYSIZE_BYTES];
        System.arraycopy(data, off, b, 0, KEYSIZE_BYTES);
        return new PublicKey(EncType.ELGAMAL_2048, b);
    }
    public int length() { return _type != null ? _type.getPubkeyLen() : (_data != null ? _data.length : KEYSIZE_BYTES); }
    public EncType getType() { return _type; }
    public int getUnknownTypeCode() { return _unknownTypeCode; }
}
