package net.i2p.util;
/** garlicfarm verifier STUB */
public class SystemVersion {
    public static long getMaxMemory() { return Runtime.getRuntime().maxMemory(); }
    public static boolean isAndroid() { return false; }
    public static boolean isARM() { return false; }
}
