package net.i2p.util;
import java.util.*;
/**
 * garlicfarm verifier STUB of net.i2p.util.OrderedProperties: a Properties whose
 * entrySet()/keySet() iterate in key order (String.compareTo), which is what the
 * real class does and what DataHelper.writeProperties relies on.
 */
public class OrderedProperties extends Properties {
    private final TreeMap<Object, Object> m = new TreeMap<Object, Object>();
    @Override public synchronized Object put(Object k, Object v) { return m.put(k, v); }
    @Override public synchronized Object get(Object k) { return m.get(k); }
    @Override public String getProperty(String k) { Object v = m.get(k); return v instanceof String ? (String) v : null; }
    @Override public synchronized Object remove(Object k) { return m.remove(k); }
    @Override public synchronized int size() { return m.size(); }
    @Override public synchronized boolean isEmpty() { return m.isEmpty(); }
    @Override public synchronized void clear() { m.clear(); }
    @Override public synchronized boolean containsKey(Object k) { return m.containsKey(k); }
    @Override public synchronized void putAll(Map<?, ?> t) { for (Map.Entry<?, ?> e : t.entrySet()) m.put(e.getKey(), e.getValue()); }
    @Override public Set<Map.Entry<Object, Object>> entrySet() { return Collections.unmodifiableSet(m.entrySet()); }
    @Override public Set<Object> keySet() { return Collections.unmodifiableSet(m.keySet()); }
}
