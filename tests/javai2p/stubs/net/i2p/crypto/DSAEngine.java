package net.i2p.crypto;

import java.security.GeneralSecurityException;
import java.security.InvalidKeyException;
import java.security.PublicKey;

import net.i2p.crypto.eddsa.EdDSAEngine;
import net.i2p.crypto.eddsa.EdDSAPublicKey;
import net.i2p.crypto.eddsa.spec.EdDSAParameterSpec;
import net.i2p.crypto.eddsa.spec.EdDSAPublicKeySpec;
import net.i2p.data.Signature;
import net.i2p.data.SigningPrivateKey;
import net.i2p.data.SigningPublicKey;

/**
 * garlicfarm verifier STUB of net.i2p.crypto.DSAEngine (the real class drags in
 * I2PAppContext, DSA/SHA-1, RSA/ECDSA via SigUtil and the JCA parameter specs).
 *
 * Only the EdDSA branch of the real verify path is kept, written the way Java I2P
 * does it, and the crypto is I2P's REAL code (net.i2p.crypto.eddsa, compiled from
 * the i2p/i2p.i2p sources listed in tests/javai2p/i2p-files.txt; not the JDK's Ed25519):
 *
 *   DSAEngine.verifySignature(sig, data, off, len, key)   [real: type check, then altVerifySig]
 *   altVerifySig:  PublicKey pubKey = SigUtil.toJavaKey(key);      -> toJavaEdDSAKey below
 *                  byte[] sigbytes = SigUtil.toJavaSig(sig);       -> sig.getData() for EdDSA
 *                  EdDSAEngine jsig = new EdDSAEngine(type.getDigestInstance());
 *                  jsig.initVerify(pubKey);
 *                  rv = jsig.verifyOneShot(data, offset, len, sigbytes);
 *   SigUtil.cvtToJavaEdDSAKey(pk):
 *                  new EdDSAPublicKey(new EdDSAPublicKeySpec(pk.getData(),
 *                                     (EdDSAParameterSpec) pk.getType().getParams()))
 *
 * Types other than EdDSA_SHA512_Ed25519 (7) answer false. Signing is not supported.
 */
public class DSAEngine {
    private static final DSAEngine INSTANCE = new DSAEngine();

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
            return altVerifySig(signature, data, offset, size, key);
        } catch (GeneralSecurityException gse) {
            // real DSAEngine logs and answers false
            System.err.println("DSAEngine stub: " + gse);
            return false;
        }
    }

    /** EdDSA branch of the real DSAEngine.altVerifySig, on I2P's real EdDSAEngine. */
    private boolean altVerifySig(Signature signature, byte[] data, int offset, int len, SigningPublicKey verifyingKey)
                        throws GeneralSecurityException {
        SigType type = signature.getType();
        PublicKey pubKey = toJavaEdDSAKey(verifyingKey);
        byte[] sigbytes = signature.getData();
        EdDSAEngine jsig = new EdDSAEngine(type.getDigestInstance());
        jsig.initVerify(pubKey);
        return jsig.verifyOneShot(data, offset, len, sigbytes);
    }

    /** As the real SigUtil.cvtToJavaEdDSAKey(SigningPublicKey) (no cache). */
    static EdDSAPublicKey toJavaEdDSAKey(SigningPublicKey pk) throws GeneralSecurityException {
        try {
            return new EdDSAPublicKey(new EdDSAPublicKeySpec(
                pk.getData(), (EdDSAParameterSpec) pk.getType().getParams()));
        } catch (IllegalArgumentException iae) {
            throw new InvalidKeyException(iae);
        }
    }

    public Signature sign(byte[] data, SigningPrivateKey key) {
        throw new UnsupportedOperationException("stub: signing not supported");
    }
}
