package io.ctxprof;

import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Finds and loads libctxprof for {@link Profiler#getInstance()}, in this order:
 *
 * <ol>
 *   <li>the system property {@code ctxprof.library} (an absolute path); when it is set nothing
 *       else is tried, so a wrong path is reported rather than hidden;
 *   <li>the copy bundled in the jar as {@code /native/<os>-<arch>/libctxprof.so} (the release jar
 *       carries linux-x64), copied to a file in a fresh temporary folder that only this user can
 *       enter (0700, the file 0500) and deleted when the JVM exits; the copy is needed because
 *       the dynamic loader reads only files;
 *   <li>{@code libctxprof.so} in the folder of the jar this class was loaded from (the release
 *       archive's lib/);
 *   <li>{@code ctxprof} from {@code java.library.path}.
 * </ol>
 *
 * <p>Nothing is loaded from paths taken from the environment. When every way fails, the {@link
 * UnsatisfiedLinkError} lists each place tried and why it failed.
 *
 * <p>JDK 24+ (JEP 472): {@code System.load} is a restricted method. Without native access for
 * this module the JDK prints its warning (or, with {@code --illegal-native-access=deny}, refuses
 * the call); so before the call we print one {@code ctxprof:} line naming the two ways to avoid
 * it, and a refusal becomes an {@link UnsatisfiedLinkError} that names them ({@link
 * #NATIVE_ACCESS_FIX}). Profiler binds to an agent's library without calling this class.
 *
 * <p>Thread safety: called once, under Profiler's lock.
 */
final class LibraryLoader {
  private LibraryLoader() {}

  /** How to load the library without JDK 24+'s restricted-method warning. */
  static final String NATIVE_ACCESS_FIX =
      "start the JVM with --enable-native-access=ALL-UNNAMED (--enable-native-access=io.ctxprof"
          + " when ctxprof.jar is on the module path; Enable-Native-Access: ALL-UNNAMED in an"
          + " executable jar's manifest), or load ctxprof as an agent first"
          + " (-agentpath:/path/libctxprof.so), which needs no System.load (docs/JAVA.md)";

  private static boolean noticePrinted;

  static void load() {
    String property = System.getProperty("ctxprof.library");
    if (property != null && !property.isEmpty()) {
      try {
        loadFile(property);
        return;
      } catch (UnsatisfiedLinkError e) {
        rethrowRefusal(e);
        throw failure(
            "ctxprof.library=" + property + ": " + e.getMessage(),
            "set -Dctxprof.library=/absolute/path/libctxprof.so",
            e);
      }
    }
    List<String> tried = new ArrayList<>();
    String platform = platform();
    if (loadBundled(platform, tried) || loadNextToJar(tried)) {
      return;
    }
    try {
      beforeRestrictedCall();
      System.loadLibrary("ctxprof");
      return;
    } catch (IllegalCallerException e) {
      throw refused("System.loadLibrary(\"ctxprof\")", e);
    } catch (UnsatisfiedLinkError e) {
      tried.add("ctxprof in java.library.path: " + e.getMessage());
    }
    String fix =
        platform.equals("linux-x64")
            ? "use the release jar (it carries libctxprof.so) or set"
                + " -Dctxprof.library=/absolute/path/libctxprof.so"
            : "this JVM runs on "
                + platform
                + ", and ctxprof ships libctxprof.so for linux-x64 only: build it for this"
                + " platform and set -Dctxprof.library=/absolute/path/libctxprof.so";
    throw failure(String.join("; ", tried), fix, null);
  }

  /** "linux-x64", "linux-arm64", "mac os x-arm64"...: the folder name under /native/. */
  static String platform() {
    String os = System.getProperty("os.name", "unknown").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "unknown").toLowerCase(Locale.ROOT);
    if (arch.equals("amd64") || arch.equals("x86_64")) {
      arch = "x64";
    } else if (arch.equals("aarch64")) {
      arch = "arm64";
    }
    return os + "-" + arch;
  }

  private static boolean loadBundled(String platform, List<String> tried) {
    String resource = "/native/" + platform + "/libctxprof.so";
    Path folder = null;
    Path copy = null;
    try (InputStream in = LibraryLoader.class.getResourceAsStream(resource)) {
      if (in == null) {
        tried.add("the jar has no " + resource);
        return false;
      }
      folder = Files.createTempDirectory("ctxprof-", ownerOnly("rwx------"));
      folder.toFile().deleteOnExit();
      copy = Files.createFile(folder.resolve("libctxprof.so"), ownerOnly("rw-------"));
      copy.toFile().deleteOnExit(); // registered after its folder: deleted before it
      Files.copy(in, copy, StandardCopyOption.REPLACE_EXISTING);
      Files.setPosixFilePermissions(copy, PosixFilePermissions.fromString("r-x------"));
    } catch (IOException | UnsupportedOperationException e) {
      tried.add(
          "the jar's "
              + resource
              + ": cannot copy it to "
              + (copy != null ? copy : folder != null ? folder : "a temporary folder")
              + " (java.io.tmpdir="
              + System.getProperty("java.io.tmpdir")
              + "): "
              + e);
      return false;
    }
    try {
      loadFile(copy.toString());
      return true;
    } catch (UnsatisfiedLinkError e) {
      rethrowRefusal(e);
      tried.add("the jar's " + resource + " copied to " + copy + ": " + e.getMessage());
      return false;
    }
  }

  /** System.load, with JDK 24+'s restriction explained (see the class comment). */
  private static void loadFile(String path) {
    beforeRestrictedCall();
    try {
      System.load(path);
    } catch (IllegalCallerException e) {
      throw refused("System.load(" + path + ")", e);
    }
  }

  /** The one notice line, printed before the JDK's warning would be. */
  private static void beforeRestrictedCall() {
    if (!noticePrinted && Runtime.version().feature() >= 24 && !nativeAccessEnabled()) {
      noticePrinted = true;
      System.err.println(
          "ctxprof: loading libctxprof.so from Java is a restricted method on JDK 24+, so the"
              + " JDK warns about it; to avoid that, "
              + NATIVE_ACCESS_FIX);
    }
  }

  /** Module.isNativeAccessEnabled() (JDK 22+) for this class's module. */
  static boolean nativeAccessEnabled() {
    try {
      Object enabled =
          Module.class.getMethod("isNativeAccessEnabled").invoke(LibraryLoader.class.getModule());
      return Boolean.TRUE.equals(enabled);
    } catch (ReflectiveOperationException e) {
      return false; // before JDK 22 there is no such method (nor a restriction)
    }
  }

  /** A refusal of native access ends the search: every other place would be refused too. */
  private static void rethrowRefusal(UnsatisfiedLinkError e) {
    if (e.getCause() instanceof IllegalCallerException) {
      throw e;
    }
  }

  private static UnsatisfiedLinkError refused(String call, IllegalCallerException e) {
    UnsatisfiedLinkError error =
        new UnsatisfiedLinkError(
            "cannot load libctxprof: the JVM refused " + call + " (" + e.getMessage() + "); "
                + NATIVE_ACCESS_FIX);
    error.initCause(e);
    return error;
  }

  private static FileAttribute<Set<PosixFilePermission>> ownerOnly(String permissions) {
    return PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString(permissions));
  }

  private static boolean loadNextToJar(List<String> tried) {
    Path jar = jarPath();
    if (jar == null) {
      tried.add("no jar folder: io.ctxprof classes were not loaded from a local jar");
      return false;
    }
    Path library = jar.resolveSibling("libctxprof.so");
    if (!Files.isRegularFile(library)) {
      tried.add(library + ": no such file");
      return false;
    }
    try {
      loadFile(library.toString());
      return true;
    } catch (UnsatisfiedLinkError e) {
      rethrowRefusal(e);
      tried.add(library + ": " + e.getMessage());
      return false;
    }
  }

  /** The local jar file this class came from, or null (a classes folder, a remote URL). */
  private static Path jarPath() {
    CodeSource source = LibraryLoader.class.getProtectionDomain().getCodeSource();
    URL location = source == null ? null : source.getLocation();
    if (location == null || !location.getProtocol().equals("file")) {
      return null;
    }
    try {
      Path path = Paths.get(location.toURI()).toAbsolutePath();
      return Files.isRegularFile(path) ? path : null;
    } catch (URISyntaxException | IllegalArgumentException e) {
      return null;
    }
  }

  private static UnsatisfiedLinkError failure(String tried, String fix, Throwable cause) {
    UnsatisfiedLinkError error =
        new UnsatisfiedLinkError("cannot load libctxprof (tried: " + tried + "); " + fix);
    if (cause != null) {
      error.initCause(cause);
    }
    return error;
  }
}
