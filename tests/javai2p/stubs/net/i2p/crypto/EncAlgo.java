package net.i2p.crypto;
/** garlicfarm verifier STUB */
public enum EncAlgo { ELGAMAL, EC, ECIES }
