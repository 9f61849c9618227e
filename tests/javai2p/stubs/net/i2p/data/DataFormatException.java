package net.i2p.data;
/** garlicfarm verifier STUB (same shape as I2P's) */
public class DataFormatException extends Exception {
    public DataFormatException(String msg) { super(msg); }
    public DataFormatException(String msg, Throwable t) { super(msg, t); }
}
