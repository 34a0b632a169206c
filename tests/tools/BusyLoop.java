/** Burns CPU in two methods for the given milliseconds, so a JDK recording has samples. */
public final class BusyLoop {
  private BusyLoop() {}

  static double square(int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += Math.sqrt(i) * Math.sin(i);
    return sum;
  }

  static double logarithm(int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += Math.log(i + 1);
    return sum;
  }

  public static void main(String[] args) {
    final long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000L;
    double sum = 0;
    while (System.nanoTime() < end) sum += square(200_000) + logarithm(100_000);
    System.out.println(sum != 0);
  }
}
