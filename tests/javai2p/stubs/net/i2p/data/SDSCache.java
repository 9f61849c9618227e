package net.i2p.data;
import java.io.*;
/** garlicfarm verifier STUB of SDSCache: no caching, builds a new instance each time. */
public class SDSCache<V extends SimpleDataStructure> {
    private final Class<V> _cls;
    private final int _len;
    public SDSCache(Class<V> cls, int len, int size) { _cls = cls; _len = len; }
    private V make(byte[] b) {
        try { return _cls.getConstructor(byte[].class).newInstance((Object) b); }
        catch (Exception e) { throw new RuntimeException(e); }
    }
    public V get(InputStream in) throws IOException { byte[] b = new byte[_len]; DataHelper.read(in, b); return make(b); }
    public V get(byte[] data, int off) { byte[] b = new byte[_len]; System.arraycopy(data, off, b, 0, _len); return make(b); }
    public void clear() {}
}
