package net.i2p.crypto;
/** garlicfarm verifier STUB: base algorithms of SigType. */
public enum SigAlgo { DSA, EC, EdDSA, RSA, RedDSA }
