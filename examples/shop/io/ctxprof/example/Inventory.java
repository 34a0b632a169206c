package io.ctxprof.example;

/**
 * The shop's stock, one table behind one monitor: every reservation holds it for its
 * bookkeeping (about 2 ms of CPU on the machine it was tuned on), so concurrent /inventory
 * requests queue for it. The wait for the monitor is what a lock profile shows; the time spent
 * holding it is CPU.
 */
final class Inventory {
  /** Passes over the stock table per reservation: what makes the monitor's hold time. */
  static final int LEDGER_PASSES = 800;

  /** What one reservation did: the stock left and how long it waited for the monitor. */
  static final class Reservation {
    final int left;
    final long blockedNanos;

    Reservation(int left, long blockedNanos) {
      this.left = left;
      this.blockedNanos = blockedNanos;
    }
  }

  private final int[] stock;
  private long ledgerChecksum;

  Inventory(int items) {
    stock = new int[items];
    java.util.Arrays.fill(stock, 1_000_000);
  }

  Reservation reserve(int sku) {
    long waitStart = System.nanoTime();
    synchronized (this) {
      long blocked = System.nanoTime() - waitStart;
      int index = Math.floorMod(sku, stock.length);
      stock[index] = stock[index] > 0 ? stock[index] - 1 : 1_000_000;
      ledgerChecksum = recomputeLedger();
      return new Reservation(stock[index], blocked);
    }
  }

  /** The bookkeeping done under the monitor: a checksum over the whole table, several times. */
  private long recomputeLedger() {
    long sum = ledgerChecksum;
    for (int pass = 0; pass < LEDGER_PASSES; pass++) {
      for (int i = 0; i < stock.length; i++) {
        sum = sum * 31 + (stock[i] ^ pass);
      }
    }
    return sum;
  }
}
