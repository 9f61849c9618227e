package net.i2p.util;
/** garlicfarm verifier STUB: system time, or -Dverify.now=<ms since epoch> to pretend another time. */
public class Clock {
    private static final Clock INSTANCE = new Clock();
    public static Clock getInstance() { return INSTANCE; }
    public long now() {
        String s = System.getProperty("verify.now");
        return s != null ? Long.parseLong(s) : System.currentTimeMillis();
    }
}
