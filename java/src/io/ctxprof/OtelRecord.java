package io.ctxprof;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A platform thread's OpenTelemetry thread context record (OTEP 4947; native side and layout:
 * context/otel_thread_record.h), kept current by the Java writer while {@code otelcontext=true}
 * publishing is on: after each block write, {@link #refresh} rewrites the record from the block.
 *
 * <p>The record is built in a Java array (trace and span ids big-endian, as W3C orders them;
 * entries {slot, length, UTF-8 value}) and then written with the OTEP's protocol: {@code valid
 * = 0}, a store-store fence, one bulk copy of the ids and entries, a store-store fence, and one
 * 4-byte store of {valid = 1, flags = 0, size}. Readers read it only while this thread is
 * stopped, so the fences (compiler barriers on x86-64) are all the ordering they need. An empty
 * context is {@code valid = 0}. Three stores to the record per write, whatever the attributes
 * (why not an entry per change: docs/JAVA.md).
 *
 * <p>Values come from the dictionary by id: a process-wide table filled on first use of an id
 * (one JNI call per id), and a per-slot cache of the last id, so a repeated value costs an
 * {@code int} compare.
 */
final class OtelRecord {
  private static final int VALID = 24; // OTEP 4947 offsets
  private static final int HEADER = 28;
  private static final int MAX_VALUE_BYTES = 255;
  private static final long FLAG; // the pool's "publishing" word, as an offset in the map
  private static final VarHandle BIG_ENDIAN_LONG =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  /** A value's bytes; the final field publishes them safely through the racy table. */
  private static final class Text {
    final byte[] utf8;

    Text(byte[] utf8) {
      this.utf8 = utf8;
    }
  }

  private static volatile Text[] texts = new Text[256];

  /**
   * Whether Java writes publish: turned on once by sync(). A volatile static is a plain load on
   * x86-64 (the alternatives tried and their costs: docs/JAVA.md).
   */
  static volatile boolean publishing;

  static {
    ByteBuffer flag = Native.otelFlag0();
    // The flag byte is the pool's record 0 `valid` (offset 24): the aligned word around it
    // holds nothing else but zeros.
    FLAG = flag == null ? -1 : BlockMemory.offsetOf(flag);
    sync();
  }

  private final long record; // offset of this thread's record in the map
  private final byte[] mirror;
  private final int[] ids = new int[ContextLayout.ATTRIBUTE_SLOTS];
  private final byte[][] values = new byte[ContextLayout.ATTRIBUTE_SLOTS][];

  private OtelRecord(long record, int bytes) {
    this.record = record;
    this.mirror = new byte[bytes];
  }

  /** Whether the process publishes OpenTelemetry contexts (one load from the map). */
  static boolean enabled() {
    return FLAG >= 0 && BlockMemory.getLong(FLAG) != 0;
  }

  /**
   * Turns Java publishing on when the process publishes: called when this class initializes
   * (an agent started with otelcontext=true before), after each Profiler.execute, and by the
   * library when a session started through attach turned publishing on (jni/attach_command.cc,
   * through JvmAgent::SyncJavaOtel).
   */
  static void sync() {
    if (!publishing && enabled()) {
      publishing = true;
    }
  }

  /** The calling thread's record (claimed natively, pointer published), or null. */
  static OtelRecord ofCurrentThread() {
    ByteBuffer record = Native.otelRecord0();
    return record == null ? null : new OtelRecord(BlockMemory.offsetOf(record), record.capacity());
  }

  /** Rewrites the record from {@code block}, this thread's block, just written. */
  void refresh(long block) {
    long high = BlockMemory.getLong(block + ContextLayout.TRACE_ID_HIGH);
    long low = BlockMemory.getLong(block + ContextLayout.TRACE_ID_LOW);
    long span = BlockMemory.getLong(block + ContextLayout.SPAN_ID);
    long a01 = BlockMemory.getLong(block + ContextLayout.ATTRIBUTES);
    long a23 = BlockMemory.getLong(block + ContextLayout.ATTRIBUTES + 8);
    long a45 = BlockMemory.getLong(block + ContextLayout.ATTRIBUTES + 16);
    long a67 = BlockMemory.getLong(block + ContextLayout.ATTRIBUTES + 24);
    BlockMemory.putByte(record + VALID, (byte) 0);
    if ((high | low | span | a01 | a23 | a45 | a67) == 0) {
      return; // detached
    }
    byte[] out = mirror;
    BIG_ENDIAN_LONG.set(out, 0, high);
    BIG_ENDIAN_LONG.set(out, 8, low);
    BIG_ENDIAN_LONG.set(out, 16, span);
    int end = HEADER;
    end = put(0, (int) a01, end);
    end = put(1, (int) (a01 >>> 32), end);
    end = put(2, (int) a23, end);
    end = put(3, (int) (a23 >>> 32), end);
    end = put(4, (int) a45, end);
    end = put(5, (int) (a45 >>> 32), end);
    end = put(6, (int) a67, end);
    end = put(7, (int) (a67 >>> 32), end);
    VarHandle.storeStoreFence(); // valid = 0 before any field
    BlockMemory.copy(out, end, record); // out[24..27] stay 0: still invalid
    VarHandle.storeStoreFence(); // every field before valid = 1
    BlockMemory.putInt(record + VALID, 1 | (end - HEADER) << 16); // little-endian host
  }

  /** Appends slot's entry at {@code end}; returns the new end (unchanged: unset or no room). */
  private int put(int slot, int id, int end) {
    if (id == 0) {
      return end;
    }
    byte[] value = ids[slot] == id ? values[slot] : remember(slot, id);
    int next = end + 2 + value.length;
    if (next > mirror.length) {
      return end; // does not fit: left out, as the native writer does
    }
    mirror[end] = (byte) slot;
    mirror[end + 1] = (byte) value.length;
    System.arraycopy(value, 0, mirror, end + 2, value.length);
    return next;
  }

  private byte[] remember(int slot, int id) {
    byte[] value = textOf(id);
    ids[slot] = id;
    values[slot] = value;
    return value;
  }

  private static byte[] textOf(int id) {
    Text[] table = texts;
    if (id < table.length) {
      Text text = table[id];
      if (text != null) {
        return text.utf8;
      }
    }
    return load(id);
  }

  private static synchronized byte[] load(int id) {
    Text[] table = texts;
    if (id >= table.length) {
      table = Arrays.copyOf(table, Math.max(id + 1, 2 * table.length));
    }
    if (table[id] == null) {
      table[id] = new Text(cut(Native.valueOf0(id).getBytes(StandardCharsets.UTF_8)));
    }
    texts = table;
    return table[id].utf8;
  }

  /** At most 255 bytes, not ending inside a UTF-8 sequence. */
  private static byte[] cut(byte[] utf8) {
    if (utf8.length <= MAX_VALUE_BYTES) {
      return utf8;
    }
    int end = MAX_VALUE_BYTES;
    while (end > 0 && (utf8[end] & 0xc0) == 0x80) {
      end--;
    }
    return Arrays.copyOf(utf8, end);
  }
}
