package net.i2p.util;
/** garlicfarm verifier STUB: prints errors to stderr. */
public class Log {
    public Log(Class<?> c) {}
    public void error(String s, Throwable t) { System.err.println("ERROR " + s + " " + t); }
    public void error(String s) { System.err.println("ERROR " + s); }
}
