package net.i2p.data;
import java.util.Properties;
/** garlicfarm verifier STUB: immutable empty Properties (I2P's EmptyProperties.INSTANCE). */
public class EmptyProperties extends Properties {
    public static final EmptyProperties INSTANCE = new EmptyProperties();
    private EmptyProperties() {}
    @Override public synchronized Object put(Object k, Object v) { throw new UnsupportedOperationException(); }
}
