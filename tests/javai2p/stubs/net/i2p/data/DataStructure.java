package net.i2p.data;
import java.io.*;
/** garlicfarm verifier STUB */
public interface DataStructure {
    void readBytes(InputStream in) throws DataFormatException, IOException;
    void writeBytes(OutputStream out) throws DataFormatException, IOException;
    String toBase64();
    void fromBase64(String data) throws DataFormatException;
    byte[] toByteArray();
    void fromByteArray(byte[] data) throws DataFormatException;
    Hash calculateHash();
}
