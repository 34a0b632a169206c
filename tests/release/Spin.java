/**
 * A JVM without ctxprof for the release test to attach to or record: burns CPU in spin() and
 * prints "ready" once running; runs for args[0] milliseconds (default: until killed).
 */
public final class Spin {
  private Spin() {}

  static double spin(int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) {
      sum += Math.sqrt(i) * Math.sin(i);
    }
    return sum;
  }

  public static void main(String[] args) {
    final long end =
        args.length > 0 ? System.nanoTime() + Long.parseLong(args[0]) * 1_000_000L : Long.MAX_VALUE;
    System.out.println("ready");
    double sum = 0;
    while (System.nanoTime() < end) {
      sum += spin(200_000);
    }
    System.out.println(sum != 0);
  }
}
