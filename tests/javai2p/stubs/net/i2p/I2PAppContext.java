package net.i2p;

import net.i2p.crypto.AESEngine;
import net.i2p.crypto.DSAEngine;
import net.i2p.data.RoutingKeyGenerator;
import net.i2p.util.Clock;
import net.i2p.util.KeyRing;
import net.i2p.util.LogManager;

/** garlicfarm verifier STUB: only the accessors LeaseSet/LeaseSet2/DatabaseEntry call. */
public class I2PAppContext {
    private static final I2PAppContext INSTANCE = new I2PAppContext();
    public static I2PAppContext getGlobalContext() { return INSTANCE; }
    public Clock clock() { return Clock.getInstance(); }
    public DSAEngine dsa() { return DSAEngine.getInstance(); }
    public boolean isRouterContext() { return false; }
    public RoutingKeyGenerator routingKeyGenerator() { throw new UnsupportedOperationException("stub"); }
    public AESEngine aes() { return new AESEngine(); }
    public KeyRing keyRing() { return new KeyRing(); }
    public LogManager logManager() { return new LogManager(); }
}
