package net.i2p.data;
import net.i2p.crypto.SigType;
/** garlicfarm verifier STUB (signing is not used) */
public class SigningPrivateKey extends SimpleDataStructure {
    public int length() { return 32; }
    public SigType getType() { return SigType.EdDSA_SHA512_Ed25519; }
}
