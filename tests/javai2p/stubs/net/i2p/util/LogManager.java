package net.i2p.util;
/** garlicfarm verifier STUB */
public class LogManager {
    public Log getLog(Class<?> c) { return new Log(c); }
}
