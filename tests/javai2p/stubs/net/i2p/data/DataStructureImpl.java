package net.i2p.data;
import java.io.*;
import net.i2p.crypto.SHA256Generator;
/** garlicfarm verifier STUB of DataStructureImpl (serialize via writeBytes/readBytes). */
public abstract class DataStructureImpl implements DataStructure {
    public String toBase64() { byte[] d = toByteArray(); return d == null ? null : Base64.encode(d); }
    public void fromBase64(String data) throws DataFormatException {
        byte[] d = Base64.decode(data);
        if (d == null) throw new DataFormatException("Bad Base64");
        fromByteArray(d);
    }
    public Hash calculateHash() { byte[] d = toByteArray(); return d == null ? null : SHA256Generator.getInstance().calculateHash(d); }
    public byte[] toByteArray() {
        try { ByteArrayOutputStream o = new ByteArrayOutputStream(512); writeBytes(o); return o.toByteArray(); }
        catch (Exception e) { return null; }
    }
    public void fromByteArray(byte[] data) throws DataFormatException {
        try { readBytes(new ByteArrayInputStream(data)); } catch (IOException e) { throw new DataFormatException("IO", e); }
    }
    /** like I2P: read fully, EOFException if short */
    protected int read(InputStream in, byte[] target) throws IOException { return DataHelper.read(in, target); }
}
