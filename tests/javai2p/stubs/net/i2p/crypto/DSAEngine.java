package net.i2p.crypto;

import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.spec.X509EncodedKeySpec;

import net.i2p.data.Signature;
import net.i2p.data.SigningPrivateKey;
import net.i2p.data.SigningPublicKey;

/**
 * garlicfarm verifier STUB of net.i2p.crypto.DSAEngine.
 * NOT I2P's code: Ed25519 (sig type 7) is verified with the JDK's own Ed25519
 * (java.security, JDK 15+), not with I2P's net.i2p.crypto.eddsa. Every other
 * type answers false. Signing is not supported.
 */
public class DSAEngine {
    private static final DSAEngine INSTANCE = new DSAEngine();
    private static final byte[] ED25519_SPKI_PREFIX = {
        0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00 };

    public static DSAEngine getInstance() { return INSTANCE; }

    public boolean verifySignature(Signature signature, byte[] signedData, SigningPublicKey verifyingKey) {
        if (signedData == null)
            return false;
        return verifySignature(signature, signedData, 0, signedData.length, verifyingKey);
    }

    public boolean verifySignature(Signature signature, byte[] data, int offset, int size, SigningPublicKey key) {
        if (signature == null || key == null || data == null)
            return false;
        SigType type = signature.getType();
        if (type != key.getType()) {
            System.err.println("DSAEngine stub: sig type " + type + " != key type " + key.getType());
            return false;
        }
        if (type != SigType.EdDSA_SHA512_Ed25519) {
            System.err.println("DSAEngine stub: unsupported sig type " + type);
            return false;
        }
        try {
            byte[] spki = new byte[ED25519_SPKI_PREFIX.length + 32];
            System.arraycopy(ED25519_SPKI_PREFIX, 0, spki, 0, ED25519_SPKI_PREFIX.length);
            System.arraycopy(key.getData(), 0, spki, ED25519_SPKI_PREFIX.length, 32);
            PublicKey pk = KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(spki));
            java.security.Signature v = java.security.Signature.getInstance("Ed25519");
            v.initVerify(pk);
            v.update(data, offset, size);
            return v.verify(signature.getData());
        } catch (Exception e) {
            System.err.println("DSAEngine stub: " + e);
            return false;
        }
    }

    public Signature sign(byte[] data, SigningPrivateKey key) {
        throw new UnsupportedOperationException("stub: signing not supported");
    }
}
