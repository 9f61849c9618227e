package net.i2p.crypto.eddsa.math.bigint;

import java.math.BigInteger;

import net.i2p.crypto.eddsa.math.Field;
import net.i2p.crypto.eddsa.math.ScalarOps;

/**
 * garlicfarm verifier STUB of net.i2p.crypto.eddsa.math.bigint.BigIntegerScalarOps.
 * The stored copy of i2p/i2p.i2p has no version of this file; I2P's real
 * EdDSABlinding imports it (for key blinding, proposal 123). Nothing on the
 * verification path calls it: EdDSAEngine only reads EdDSABlinding.ORDER.
 */
public class BigIntegerScalarOps implements ScalarOps {
    private static final long serialVersionUID = 1L;

    public BigIntegerScalarOps(Field f, BigInteger l) {}

    public byte[] reduce(byte[] s) {
        throw new UnsupportedOperationException("stub: BigIntegerScalarOps not available");
    }

    public byte[] multiplyAndAdd(byte[] a, byte[] b, byte[] c) {
        throw new UnsupportedOperationException("stub: BigIntegerScalarOps not available");
    }
}
