package net.i2p.crypto;
/**
 * garlicfarm verifier STUB of net.i2p.crypto.SigType: codes and lengths as in I2P's
 * common-structures spec (code, pubkey, privkey, hash, sig length). The real enum
 * also carries JCA parameter specs, which pull in much of net.i2p.crypto;
 * here only the EdDSA ones are given (getParams / getDigestInstance), from I2P's real
 * net.i2p.crypto.eddsa.spec.EdDSANamedCurveTable, as the real enum does for types 7 and 8.
 */
public enum SigType {
    DSA_SHA1(0, 128, 20, 20, 40, SigAlgo.DSA),
    ECDSA_SHA256_P256(1, 64, 32, 32, 64, SigAlgo.EC),
    ECDSA_SHA384_P384(2, 96, 48, 48, 96, SigAlgo.EC),
    ECDSA_SHA512_P521(3, 132, 66, 64, 132, SigAlgo.EC),
    RSA_SHA256_2048(4, 256, 512, 32, 256, SigAlgo.RSA),
    RSA_SHA384_3072(5, 384, 768, 48, 384, SigAlgo.RSA),
    RSA_SHA512_4096(6, 512, 1024, 64, 512, SigAlgo.RSA),
    EdDSA_SHA512_Ed25519(7, 32, 32, 64, 64, SigAlgo.EdDSA),
    EdDSA_SHA512_Ed25519ph(8, 32, 32, 64, 64, SigAlgo.EdDSA),
    RedDSA_SHA512_Ed25519(11, 32, 32, 64, 64, SigAlgo.RedDSA);

    private final int code, pubkeyLen, privkeyLen, hashLen, sigLen;
    private final SigAlgo base;
    SigType(int code, int pub, int priv, int hash, int sig, SigAlgo base) {
        this.code = code; this.pubkeyLen = pub; this.privkeyLen = priv; this.hashLen = hash; this.sigLen = sig; this.base = base;
    }
    public int getCode() { return code; }
    public int getPubkeyLen() { return pubkeyLen; }
    public int getPrivkeyLen() { return privkeyLen; }
    public int getHashLen() { return hashLen; }
    public int getSigLen() { return sigLen; }
    public SigAlgo getBaseAlgorithm() { return base; }
    /** Real SigType: EdDSA_SHA512_Ed25519/ph carry EdDSANamedCurveTable.getByName("ed25519-sha-512"). */
    public java.security.spec.AlgorithmParameterSpec getParams() throws java.security.spec.InvalidParameterSpecException {
        if (this == EdDSA_SHA512_Ed25519 || this == EdDSA_SHA512_Ed25519ph)
            return net.i2p.crypto.eddsa.spec.EdDSANamedCurveTable.getByName("ed25519-sha-512");
        throw new java.security.spec.InvalidParameterSpecException("stub: no params for " + this);
    }
    /** Real SigType: MessageDigest for the type's digest ("SHA-512" for the EdDSA types). */
    public java.security.MessageDigest getDigestInstance() {
        String d;
        switch (hashLen) { case 20: d = "SHA-1"; break; case 32: d = "SHA-256"; break; case 48: d = "SHA-384"; break; default: d = "SHA-512"; }
        try { return java.security.MessageDigest.getInstance(d); }
        catch (java.security.NoSuchAlgorithmException e) { throw new RuntimeException(e); }
    }
    public static SigType getByCode(int code) {
        for (SigType t : values()) if (t.code == code) return t;
        return null;
    }
}
