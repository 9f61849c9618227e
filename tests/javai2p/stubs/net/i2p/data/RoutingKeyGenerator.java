package net.i2p.data;
/** garlicfarm verifier STUB (router only) */
public class RoutingKeyGenerator {
    public long getLastChanged() { return 0; }
    public Hash getRoutingKey(Hash h) { throw new UnsupportedOperationException("stub"); }
}
