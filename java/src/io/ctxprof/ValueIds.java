package io.ctxprof;

import java.util.concurrent.ConcurrentHashMap;

/**
 * Dictionary ids of attribute values, cached so a repeated value costs no JNI call.
 *
 * <p>Ids come from the process-wide native dictionary and stay valid for the life of the
 * process, so caches are never invalidated. Two levels: {@link #lookup} is a per-thread,
 * direct-mapped array (a hit is an identity or equals check on the value's cached hash code);
 * {@link #intern} is shared by all threads and falls back to one JNI call per distinct value.
 */
final class ValueIds {
  /** Native Dictionary::kOverflowId: the dictionary was full. */
  static final int OVERFLOW_ID = 1;

  // Bounded like the native dictionary (65,536 values by default) so a flood of distinct values
  // cannot grow the Java heap without bound; past the bound, lookups go to JNI.
  private static final int SHARED_LIMIT = 1 << 17;
  private static final ConcurrentHashMap<String, Integer> SHARED = new ConcurrentHashMap<>();

  private static final int LOCAL_SIZE = 256; // power of two
  private final String[] localValues = new String[LOCAL_SIZE];
  private final int[] localIds = new int[LOCAL_SIZE];

  /** The id of {@code value} (never null), from this thread's cache when possible. */
  int lookup(String value) {
    int index = value.hashCode() & (LOCAL_SIZE - 1);
    String cached = localValues[index];
    if (cached == value || (cached != null && cached.equals(value))) {
      return localIds[index];
    }
    int id = intern(value);
    localValues[index] = value;
    localIds[index] = id;
    return id;
  }

  /** The id of {@code value} through the shared cache, interning it natively on first sight. */
  static int intern(String value) {
    Integer id = SHARED.get(value);
    if (id != null) {
      return id;
    }
    int interned = Native.intern0(value);
    if (SHARED.size() < SHARED_LIMIT) {
      SHARED.putIfAbsent(value, interned);
    }
    return interned;
  }
}
