package net.i2p.data;

import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

import net.i2p.util.OrderedProperties;

/**
 * garlicfarm verifier STUB of net.i2p.data.DataHelper: only the methods the LS2 path uses.
 * readProperties(InputStream, Properties) and writeProperties(...) follow the real code
 * (i2p.i2p core/java/src/net/i2p/data/DataHelper.java @ 8ed1b96f) line by line, except
 * that a null props argument gives EmptyProperties / OrderedProperties, as later I2P does
 * (MetaLeaseSet @ 8c9ce568 calls readProperties(in, null)). The key-interning cache is left out.
 * The rest (readLong, writeLong, read, skip, readString, writeString, eq, ...) is our own,
 * big-endian, EOFException on short input.
 */
public class DataHelper {

    public static Properties readProperties(InputStream rawStream) throws DataFormatException, IOException {
        return readProperties(rawStream, new OrderedProperties());
    }

    public static Properties readProperties(InputStream rawStream, Properties props)
        throws DataFormatException, IOException {
        long size = readLong(rawStream, 2);
        if (props == null)
            props = (size == 0) ? EmptyProperties.INSTANCE : new OrderedProperties();
        byte data[] = new byte[(int) size];
        int read = read(rawStream, data);
        if (read != size) throw new DataFormatException("Not enough data to read the properties, expected " + size + " but got " + read);
        ByteArrayInputStream in = new ByteArrayInputStream(data);
        while (in.available() > 0) {
            String key = readString(in);
            int b = in.read();
            if (b != '=')
                throw new DataFormatException("Bad key");
            String val = readString(in);
            b = in.read();
            if (b != ';')
                throw new DataFormatException("Bad value");
            Object old = props.put(key, val);
            if (old != null)
                throw new DataFormatException("Duplicate key " + key);
        }
        return props;
    }

    public static void writeProperties(OutputStream rawStream, Properties props)
            throws DataFormatException, IOException {
        writeProperties(rawStream, props, false);
    }

    public static void writeProperties(OutputStream rawStream, Properties props, boolean utf8)
            throws DataFormatException, IOException {
        writeProperties(rawStream, props, utf8, props != null && !(props instanceof OrderedProperties));
    }

    public static void writeProperties(OutputStream rawStream, Properties props, boolean utf8, boolean sort)
            throws DataFormatException, IOException {
        if (props != null && !props.isEmpty()) {
            Properties p;
            if (sort) {
                p = new OrderedProperties();
                p.putAll(props);
            } else {
                p = props;
            }
            ByteArrayOutputStream baos = new ByteArrayOutputStream(p.size() * 64);
            for (Map.Entry<Object, Object> entry : p.entrySet()) {
                String key = (String) entry.getKey();
                String val = (String) entry.getValue();
                writeString(baos, key);
                baos.write('=');
                writeString(baos, val);
                baos.write(';');
            }
            if (baos.size() > 65535)
                throw new DataFormatException("Properties too big (65535 max): " + baos.size());
            byte propBytes[] = baos.toByteArray();
            writeLong(rawStream, 2, propBytes.length);
            rawStream.write(propBytes);
        } else {
            writeLong(rawStream, 2, 0);
        }
    }

    /** The mapping bytes including the 2-byte length. */
    public static byte[] toProperties(Properties opts) throws DataFormatException {
        try {
            ByteArrayOutputStream baos = new ByteArrayOutputStream();
            writeProperties(baos, opts);
            return baos.toByteArray();
        } catch (IOException ioe) {
            throw new DataFormatException("IO", ioe);
        }
    }

    public static String readString(InputStream in) throws DataFormatException, IOException {
        int size = (int) readLong(in, 1);
        byte[] raw = new byte[size];
        read(in, raw);
        return new String(raw, StandardCharsets.UTF_8);
    }

    /** UTF-8, 255 bytes max */
    public static void writeString(OutputStream out, String s) throws DataFormatException, IOException {
        if (s == null) { writeLong(out, 1, 0); return; }
        byte[] raw = s.getBytes(StandardCharsets.UTF_8);
        if (raw.length > 255) throw new DataFormatException("string too long");
        writeLong(out, 1, raw.length);
        out.write(raw);
    }

    public static long readLong(InputStream in, int numBytes) throws DataFormatException, IOException {
        long rv = 0;
        for (int i = 0; i < numBytes; i++) {
            int c = in.read();
            if (c == -1) throw new EOFException("EOF reading " + numBytes + " byte value");
            rv = (rv << 8) | c;
        }
        return rv;
    }

    public static void writeLong(OutputStream out, int numBytes, long value) throws DataFormatException, IOException {
        if (value < 0 || (numBytes < 8 && value >= (1L << (8 * numBytes))))
            throw new IllegalArgumentException("Value " + value + " does not fit in " + numBytes + " bytes");
        for (int i = numBytes - 1; i >= 0; i--)
            out.write((int) (value >>> (i * 8)) & 0xff);
    }

    public static void toLong(byte[] target, int off, int numBytes, long value) {
        for (int i = numBytes - 1; i >= 0; i--)
            target[off + numBytes - 1 - i] = (byte) (value >>> (i * 8));
    }

    public static long fromLong(byte[] src, int off, int numBytes) {
        long rv = 0;
        for (int i = 0; i < numBytes; i++)
            rv = (rv << 8) | (src[off + i] & 0xff);
        return rv;
    }

    public static Date readDate(InputStream in) throws DataFormatException, IOException {
        long d = readLong(in, 8);
        return d == 0 ? null : new Date(d);
    }

    public static void writeDate(OutputStream out, Date date) throws DataFormatException, IOException {
        writeLong(out, 8, date == null ? 0 : date.getTime());
    }

    /** read fully; EOFException if the stream ends first */
    public static int read(InputStream in, byte[] target) throws IOException {
        int cur = 0;
        while (cur < target.length) {
            int n = in.read(target, cur, target.length - cur);
            if (n < 0) throw new EOFException("EOF after " + cur + " of " + target.length + " bytes");
            cur += n;
        }
        return cur;
    }

    public static void skip(InputStream in, long n) throws IOException {
        for (long i = 0; i < n; i++)
            if (in.read() < 0) throw new EOFException("EOF skipping");
    }

    public static boolean eq(Object a, Object b) { return Objects.equals(a, b); }
    public static boolean eq(byte[] a, byte[] b) { return Arrays.equals(a, b); }
    public static boolean eq(List<?> a, List<?> b) { return Objects.equals(a, b); }
    public static int hashCode(Object o) { return o == null ? 0 : o.hashCode(); }
    public static int hashCode(byte[] b) { return Arrays.hashCode(b); }
    public static String toString(byte[] b, int len) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < Math.min(len, b.length); i++) sb.append(String.format("%02x", b[i]));
        return sb.toString();
    }
}
