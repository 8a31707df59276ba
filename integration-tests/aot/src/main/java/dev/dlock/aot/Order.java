package dev.dlock.aot;

/** What the key expression reads: {@code #order.id} calls the record's accessor, by reflection. */
public record Order(String id, String item) {
}
