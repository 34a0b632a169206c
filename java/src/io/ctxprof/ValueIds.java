package io.ctxprof;

import java.util.concurrent.ConcurrentHashMap;

/**
 * Dictionary ids of attribute values, cached so a repeated value costs no JNI call.
 *
 * <p>Ids come from the process-wide native dictionary and stay valid for the life of the
 * process, so nothing is ever invalidated. Two levels, both shared by all threads:
 *
 * <ul>
 *   <li>a direct-mapped array of immutable (value, id) pairs indexed by the value's hash code. A
 *       hit is an array load and an identity (or equals) check. Entries are published with plain
 *       stores: a pair's fields are final, so a thread that sees the pair sees its contents, and
 *       a thread that sees a stale or null slot just takes the slower path;
 *   <li>a bounded ConcurrentHashMap, and behind it one JNI call per value new to the process.
 * </ul>
 */
final class ValueIds {
  /** Native Dictionary::kOverflowId: the dictionary was full. */
  static final int OVERFLOW_ID = 1;

  private static final class Entry {
    final String value;
    final int id;

    Entry(String value, int id) {
      this.value = value;
      this.id = id;
    }
  }

  private static final int RECENT_SIZE = 1024; // power of two
  private static final Entry[] RECENT = new Entry[RECENT_SIZE];

  // Bounded like the native dictionary (65,536 values by default) so a flood of distinct values
  // cannot grow the Java heap without bound; past the bound, misses go to JNI.
  private static final int SHARED_LIMIT = 1 << 17;
  private static final ConcurrentHashMap<String, Integer> SHARED = new ConcurrentHashMap<>();

  private ValueIds() {}

  /** The id of {@code value}; 0 (unset) for null. */
  static int idOf(String value) {
    return value == null ? 0 : of(value);
  }

  /** The id of {@code value} (never null). */
  static int of(String value) {
    int index = value.hashCode() & (RECENT_SIZE - 1);
    Entry entry = RECENT[index];
    if (entry != null && (entry.value == value || entry.value.equals(value))) {
      return entry.id;
    }
    int id = intern(value);
    RECENT[index] = new Entry(value, id);
    return id;
  }

  /** The id of {@code value} through the shared map, interning it natively on first sight. */
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
