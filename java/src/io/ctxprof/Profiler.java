package io.ctxprof;

/**
 * Entry point to the ctxprof native profiler.
 *
 * <p>{@link #getInstance()} binds to libctxprof: if the JVM was started with
 * {@code -agentpath:/path/libctxprof.so=...} the agent's library already provides the natives;
 * otherwise the library is loaded from the system property {@code ctxprof.library} (an absolute
 * path) or, when that is unset, from the copy bundled in the jar (linux-x64), from
 * {@code libctxprof.so} next to the jar, or as {@code ctxprof} from {@code java.library.path}
 * (LibraryLoader). Nothing is loaded from paths taken from the environment.
 *
 * <p>Thread safety: all methods may be called from any thread; start, stop and dump are
 * serialized natively.
 */
public final class Profiler {
  private static final Object LOCK = new Object();
  private static volatile Profiler instance;

  private Profiler() {}

  /**
   * Loads (or binds to) libctxprof.
   *
   * @throws UnsatisfiedLinkError naming where it looked, when the library cannot be loaded
   */
  public static Profiler getInstance() {
    Profiler profiler = instance;
    if (profiler != null) {
      return profiler;
    }
    synchronized (LOCK) {
      if (instance == null) {
        bindLibrary();
        if (ContextLayout.BLOCK_SIZE <= 0) { // initializes the layout from the library
          throw new IllegalStateException("libctxprof reported an empty context block");
        }
        instance = new Profiler();
      }
      return instance;
    }
  }

  private static void bindLibrary() {
    try {
      Native.layout0(); // already bound: the agent's library is loaded
      return;
    } catch (UnsatisfiedLinkError notYetLoaded) {
      // fall through and load it
    }
    LibraryLoader.load();
  }

  /**
   * Runs a command: {@code "start,event=cpu,interval=10ms,file=x.jfr,attributes=a;b"},
   * {@code "stop"}, {@code "dump,file=y.jfr"} or {@code "status"}.
   *
   * <p>Failures name the command, then what is wrong and how to fix it ({@code "ctxprof: start:
   * option 'file': cannot create recording file /x/y.jfr: No such file or directory (create the
   * folder first)"}).
   *
   * @return what the profiler reports (notes such as an engine fallback, or the status)
   * @throws IllegalArgumentException for a malformed command or option, naming it
   * @throws IllegalStateException when the command does not fit the state (double start, stop
   *     without start, dump before any session), or the system refused what the options ask
   *     for (perf events, timers, a signal another handler owns, memory, a thread)
   * @throws java.io.UncheckedIOException when a file or folder could not be created or written
   *     (the recording's {@code file=} or {@code repository=} at start, the recording at stop,
   *     the dump file); its cause is an {@link java.io.IOException} with the same message,
   *     which names the path and the operating system's error
   */
  public String execute(String command) {
    if (command == null) {
      throw new IllegalArgumentException("command is null: use start, stop, dump or status");
    }
    try {
      return Native.execute0(command);
    } finally {
      OtelRecord.sync(); // a start with otelcontext=true turns Java publishing on
    }
  }

  /** {@code execute("start," + options)}. */
  public void start(String options) {
    execute(options == null || options.isEmpty() ? "start" : "start," + options);
  }

  /** {@code execute("stop")}. */
  public void stop() {
    execute("stop");
  }

  /**
   * {@code execute("dump,file=" + file)}: what the session recorded so far, as JFR, or as
   * collapsed stacks when {@code file} ends in {@code .txt} or {@code .collapsed}.
   */
  public void dump(String file) {
    if (file == null || file.isEmpty()) {
      throw new IllegalArgumentException("dump needs a file: dump(\"/path/profile.jfr\")");
    }
    execute("dump,file=" + file);
  }
}
