package net.i2p.data;
import net.i2p.crypto.SigType;
/**
 * garlicfarm verifier STUB of Signature: typed SimpleDataStructure whose length is
 * type.getSigLen() (as in I2P 0.9.8+; the stored copy read was a pre-0.9.8 40-byte one).
 */
public class Signature extends SimpleDataStructure {
    private final SigType _type;
    public final static int SIGNATURE_BYTES = 40;
    public Signature() { this(SigType.DSA_SHA1); }
    public Signature(SigType type) { super(); _type = type; }
    public Signature(SigType type, byte[] data) { super(); _type = type; setData(data); }
    public int length() { return _type.getSigLen(); }
    public SigType getType() { return _type; }
}
