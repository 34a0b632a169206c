package io.ctxprof;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * LibraryLoader without -Dctxprof.library on a platform the jar carries no library for: the
 * error lists every place it tried and says which platform this is. (The jar under test is the
 * one without the library; the release test loads the bundled copy.)
 */
class LibraryLoaderTest {
  @Test
  void platformNamesTheOsAndTheArchitectureAsTheJarFolders() {
    assertEquals("linux-x64", withArch("amd64", LibraryLoader::platform));
    assertEquals("linux-arm64", withArch("aarch64", LibraryLoader::platform));
  }

  @Test
  void aFailureListsEveryPlaceTriedAndThePlatform() {
    String message =
        withArch(
            "aarch64",
            () -> assertThrows(UnsatisfiedLinkError.class, LibraryLoader::load).getMessage());
    assertTrue(message.startsWith("cannot load libctxprof (tried: "), message);
    assertTrue(message.contains("the jar has no /native/linux-arm64/libctxprof.so"), message);
    assertTrue(message.contains("libctxprof.so: no such file"), message); // next to the jar
    assertTrue(message.contains("ctxprof in java.library.path: "), message);
    assertTrue(
        message.contains("this JVM runs on linux-arm64, and ctxprof ships libctxprof.so for"
            + " linux-x64 only"),
        message);
    assertTrue(message.endsWith("set -Dctxprof.library=/absolute/path/libctxprof.so"), message);
  }

  /** Runs `body` with os.arch = `arch` and ctxprof.library unset; restores both after. */
  private static <T> T withArch(String arch, java.util.function.Supplier<T> body) {
    String library = System.clearProperty("ctxprof.library");
    String realArch = System.setProperty("os.arch", arch);
    try {
      return body.get();
    } finally {
      System.setProperty("os.arch", realArch);
      if (library != null) {
        System.setProperty("ctxprof.library", library);
      }
    }
  }
}
