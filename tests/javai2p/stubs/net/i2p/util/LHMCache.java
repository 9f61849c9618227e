package net.i2p.util;
import java.util.LinkedHashMap;
import java.util.Map;
/** garlicfarm verifier STUB: LRU LinkedHashMap (same idea as the real class). */
public class LHMCache<K, V> extends LinkedHashMap<K, V> {
    private final int max;
    public LHMCache(int max) { super(max, 0.75f, true); this.max = max; }
    @Override protected boolean removeEldestEntry(Map.Entry<K, V> e) { return size() > max; }
}
