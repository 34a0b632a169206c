package io.ctxprof.example;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The endpoints' work. Each endpoint does a clearly different kind of work in its own methods,
 * so a profile can tell them apart by stack as well as by context.
 */
final class Handlers {
  private static final List<String> CATALOG = buildCatalog();

  private Handlers() {}

  /** /checkout: prices a cart and signs the order (hashing: CPU-bound). */
  static String checkout(int cartSize) {
    long cents = priceCart(cartSize);
    return "order " + signOrder(cents, cartSize) + " total " + cents;
  }

  static long priceCart(int cartSize) {
    long cents = 0;
    for (int item = 0; item < cartSize * 2000; item++) {
      cents += (item * 7919L) % 1013 + Long.numberOfTrailingZeros(item | 1);
    }
    return cents;
  }

  static String signOrder(long cents, int rounds) {
    try {
      MessageDigest digest = MessageDigest.getInstance("SHA-256");
      byte[] value = Long.toString(cents).getBytes(StandardCharsets.UTF_8);
      for (int i = 0; i < rounds * 400; i++) {
        value = digest.digest(value);
      }
      return String.format(Locale.ROOT, "%02x%02x%02x%02x", value[0], value[1], value[2], value[3]);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** /search: scores every catalog entry against the query (string matching: CPU-bound). */
  static String search(String query) {
    int best = -1;
    String bestItem = "";
    for (int pass = 0; pass < 8; pass++) {
      for (String item : CATALOG) {
        int score = rankItem(item, query);
        if (score > best) {
          best = score;
          bestItem = item;
        }
      }
    }
    return "best " + bestItem + " score " + best;
  }

  static int rankItem(String item, String query) {
    int score = 0;
    for (int i = 0; i + query.length() <= item.length(); i++) {
      if (item.regionMatches(true, i, query, 0, query.length())) {
        score += 10;
      }
    }
    return score + (item.hashCode() & 7);
  }

  /** /recommend: multiplies small preference matrices (floating point: CPU-bound). */
  static String recommend(int user) {
    double[][] a = matrix(48, user);
    double[][] b = matrix(48, user + 1);
    double[][] product = multiply(a, b);
    return "top " + (int) (product[user % 48][0] * 100);
  }

  static double[][] matrix(int size, int seed) {
    double[][] m = new double[size][size];
    for (int i = 0; i < size; i++) {
      for (int j = 0; j < size; j++) {
        m[i][j] = ((i * 31 + j * 17 + seed) % 97) / 97.0;
      }
    }
    return m;
  }

  static double[][] multiply(double[][] a, double[][] b) {
    int n = a.length;
    double[][] c = new double[n][n];
    for (int i = 0; i < n; i++) {
      for (int k = 0; k < n; k++) {
        double aik = a[i][k];
        for (int j = 0; j < n; j++) {
          c[i][j] += aik * b[k][j];
        }
      }
    }
    return c;
  }

  /** /inventory: waits on a slow "warehouse" (sleeping: visible to wall-clock sampling only). */
  static String inventory(int sku) throws InterruptedException {
    waitForWarehouse();
    return "sku " + sku + " in stock";
  }

  static void waitForWarehouse() throws InterruptedException {
    Thread.sleep(15);
  }

  private static List<String> buildCatalog() {
    String[] words = {"red", "blue", "shoe", "lamp", "desk", "chair", "phone", "case", "mug"};
    List<String> catalog = new ArrayList<>();
    for (int i = 0; i < 3000; i++) {
      catalog.add(words[i % words.length] + "-" + words[(i / 9) % words.length] + "-" + i);
    }
    return catalog;
  }
}
