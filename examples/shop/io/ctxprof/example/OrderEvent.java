package io.ctxprof.example;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;

/**
 * The shop's own Flight Recorder event: one per order that /checkout signs, committed inside the
 * request's span. It records only when a JDK recording enables {@code shop.Order} (for example
 * {@code ctxprof attach PID start --jfrsync +jdk.SocketRead+shop.Order}); otherwise
 * {@code commit()} returns at once. With ctxprof's {@code jfrsync} it lands in the same file as
 * the request's context, so readers show each order with its endpoint and tenant.
 */
@Name("shop.Order")
@Label("Order")
@Category("Shop")
@Description("An order priced and signed by /checkout")
final class OrderEvent extends jdk.jfr.Event {
  @Label("Items")
  int items;

  @Label("Total (cents)")
  long totalCents;

  @Label("Signature")
  String signature;
}
