package net.i2p.util;
import net.i2p.data.Hash;
import net.i2p.data.SessionKey;
/** garlicfarm verifier STUB: no keys (only LS1 encrypted-lease path uses it; LS2 sets _checked). */
public class KeyRing {
    public SessionKey get(Hash h) { return null; }
}
