package net.i2p.data;
import java.io.*;
/** garlicfarm verifier STUB: 4-byte tunnel id (Lease/Lease2 only, not MetaLease). */
public class TunnelId extends DataStructureImpl {
    private long _id = -1;
    public TunnelId() {}
    public TunnelId(long id) { _id = id; }
    public long getTunnelId() { return _id; }
    public void readBytes(InputStream in) throws DataFormatException, IOException { _id = DataHelper.readLong(in, 4); }
    public void writeBytes(OutputStream out) throws DataFormatException, IOException { DataHelper.writeLong(out, 4, _id); }
    @Override public boolean equals(Object o) { return o instanceof TunnelId && ((TunnelId) o)._id == _id; }
    @Override public int hashCode() { return (int) _id; }
}
