package io.ctxprof.example;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The endpoints' work. Each endpoint spends its time in a different way, in methods of its own,
 * so a profile tells them apart by stack as well as by context:
 *
 * <ul>
 *   <li>/checkout burns CPU (prices the cart, signs the order with SHA-256 rounds) and commits
 *       a {@code shop.Order} event ({@link OrderEvent});
 *   <li>/catalog allocates (renders a page of the catalog into fresh strings and byte arrays,
 *       about 1.7 MiB per request);
 *   <li>/inventory waits for a lock (reserves stock in the one shared {@link Inventory}, whose
 *       monitor every reservation holds for about 2 ms of bookkeeping);
 *   <li>/shipping waits for I/O (asks the {@link Carrier} over a socket, which answers after
 *       20 ms).
 * </ul>
 */
final class Handlers {
  private static final List<String> CATALOG = buildCatalog();

  private final Inventory inventory = new Inventory(CATALOG.size());
  private final Carrier carrier;

  Handlers(Carrier carrier) {
    this.carrier = carrier;
  }

  /**
   * /checkout: prices a cart and signs the order (hashing: CPU-bound), and commits the order as
   * a {@code shop.Order} Flight Recorder event (recorded only when a JDK recording enables it).
   */
  static String checkout(int cartSize) {
    OrderEvent order = new OrderEvent();
    order.begin();
    long cents = priceCart(cartSize);
    String signature = signOrder(cents, cartSize);
    order.items = cartSize;
    order.totalCents = cents;
    order.signature = signature;
    order.commit();
    return "order " + signature + " total " + cents;
  }

  static long priceCart(int cartSize) {
    long cents = 0;
    for (int item = 0; item < cartSize * 60_000; item++) {
      cents += (item * 7919L) % 1013 + Long.numberOfTrailingZeros(item | 1);
    }
    return cents;
  }

  static String signOrder(long cents, int rounds) {
    try {
      MessageDigest digest = MessageDigest.getInstance("SHA-256");
      byte[] value = Arrays.copyOf(Long.toString(cents).getBytes(StandardCharsets.UTF_8), 32);
      for (int i = 0; i < rounds * 10_000; i++) {
        digest.update(value);
        digest.digest(value, 0, value.length); // in place: hashing, not allocating
      }
      return String.format(Locale.ROOT, "%02x%02x%02x%02x", value[0], value[1], value[2], value[3]);
    } catch (DigestException | NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * /catalog: renders a page of the catalog (allocation-bound): every item becomes a fresh
   * string, the page a fresh byte array, and each item gets a thumbnail buffer of 8 KiB. What it
   * returns is small; everything it built is garbage when the request ends.
   */
  static String catalog(int page) {
    int first = (page * 200) % CATALOG.size();
    StringBuilder html = new StringBuilder();
    long thumbnails = 0;
    for (int i = 0; i < 200; i++) {
      String item = CATALOG.get((first + i) % CATALOG.size());
      html.append(renderItem(item, i));
      thumbnails += renderThumbnail(item).length;
    }
    byte[] body = html.toString().getBytes(StandardCharsets.UTF_8);
    return "page " + page + ": " + body.length + " bytes, " + thumbnails + " bytes of thumbnails";
  }

  static String renderItem(String item, int position) {
    return "<li id=\"item-" + position + "\"><a href=\"/item/" + item + "\">"
        + item.toUpperCase(Locale.ROOT) + "</a> <span>" + item.replace('-', ' ')
        + "</span></li>\n";
  }

  static byte[] renderThumbnail(String item) {
    byte[] pixels = new byte[8 * 1024];
    pixels[item.length()] = 1;
    return pixels;
  }

  /** /inventory: reserves stock in the shared inventory (lock-bound under concurrency). */
  Inventory.Reservation inventory(int sku) {
    return inventory.reserve(sku);
  }

  /** /shipping: asks the carrier for a quote over a socket (I/O-bound: the carrier is slow). */
  String shipping(int parcel) throws IOException {
    return "parcel " + parcel + ": " + carrier.quote(parcel);
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
