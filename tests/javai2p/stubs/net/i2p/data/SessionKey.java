package net.i2p.data;
/** garlicfarm verifier STUB */
public class SessionKey extends SimpleDataStructure {
    public int length() { return 32; }
}
