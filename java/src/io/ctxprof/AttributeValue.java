package io.ctxprof;

/**
 * An attribute value interned in the profiler's dictionary once, for {@link
 * ThreadHandle#setAttribute(int, AttributeValue)}: setting it is a store of its id, with no hash
 * lookup. Get one with {@link ContextSetter#value(String)} and keep it (a constant per endpoint,
 * a field per tenant object, ...). Immutable and usable on any thread, with any setter: ids are
 * process-wide and valid for the life of the process.
 */
public final class AttributeValue {
  private final String value;
  final int id;

  AttributeValue(String value, int id) {
    this.value = value;
    this.id = id;
  }

  /** The value as given to {@link ContextSetter#value(String)}. */
  public String value() {
    return value;
  }

  /**
   * False when the dictionary was full when this value was interned: samples then show it as
   * "dictionary full" (docs/JAVA.md), and setting it returns false.
   */
  public boolean isRecorded() {
    return id != ValueIds.OVERFLOW_ID;
  }

  @Override
  public String toString() {
    return value;
  }
}
