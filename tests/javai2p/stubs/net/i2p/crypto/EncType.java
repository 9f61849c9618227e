package net.i2p.crypto;
/** garlicfarm verifier STUB of net.i2p.crypto.EncType: codes and public key lengths. */
public enum EncType {
    ELGAMAL_2048(0, 256),
    EC_P256(1, 64),
    EC_P384(2, 96),
    EC_P521(3, 132),
    ECIES_X25519(4, 32);
    private final int code, pubkeyLen;
    EncType(int code, int pub) { this.code = code; this.pubkeyLen = pub; }
    public int getCode() { return code; }
    public int getPubkeyLen() { return pubkeyLen; }
    public static EncType getByCode(int code) {
        for (EncType t : values()) if (t.code == code) return t;
        return null;
    }
}
