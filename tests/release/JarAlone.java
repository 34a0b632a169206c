import io.ctxprof.Profiler;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;

/**
 * Run with the release's ctxprof.jar as the whole class path and no -Dctxprof.library:
 * Profiler.getInstance() must find the library by itself. Records args[0] while burning CPU in
 * burn(), then prints where the library was mapped from, the status and the jar's
 * Implementation-Version.
 */
public final class JarAlone {
  private JarAlone() {}

  static double burn(long millis) {
    final long end = System.nanoTime() + millis * 1_000_000L;
    double sum = 0;
    while (System.nanoTime() < end) {
      for (int i = 0; i < 100_000; i++) {
        sum += Math.sqrt(i) * Math.cos(i);
      }
    }
    return sum;
  }

  public static void main(String[] args) throws IOException {
    Profiler profiler = Profiler.getInstance();
    Files.readAllLines(Paths.get("/proc/self/maps")).stream()
        .filter(line -> line.endsWith("/libctxprof.so"))
        .map(line -> "library: " + line.substring(line.indexOf('/')))
        .distinct()
        .forEach(System.out::println);
    profiler.start("event=cpu,interval=10ms,file=" + args[0]);
    System.out.println(burn(1500) != 0);
    System.out.println("status: " + profiler.execute("status"));
    profiler.stop();
    System.out.println(
        "Implementation-Version: " + Profiler.class.getPackage().getImplementationVersion());
  }
}
