package io.icecompat.testservers;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;

/**
 * Reads an Iceberg table through a REST catalog with Iceberg Java's generic reader and prints its rows
 * as one JSON array (top-level columns; values as Jackson writes them, binary as base64).
 *
 * <p>Arguments: the catalog URI, the table identifier, then {@code key=value} catalog properties
 * (FileIO settings such as {@code s3.endpoint}). Prints the table's current snapshot id first, on a
 * line of its own, so a caller can tell which snapshot was read.
 */
public final class IcebergRead {
  private IcebergRead() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> properties = new HashMap<>();
    properties.put("uri", args[0]);
    properties.put("io-impl", "org.apache.iceberg.io.ResolvingFileIO");
    for (int i = 2; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      properties.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    ObjectMapper json = new ObjectMapper();
    ArrayNode rows = json.createArrayNode();
    try (RESTCatalog catalog = new RESTCatalog()) {
      catalog.initialize("rest", properties);
      Table table = catalog.loadTable(TableIdentifier.parse(args[1]));
      System.out.println(table.currentSnapshot() == null ? "none" : table.currentSnapshot().snapshotId());
      try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
        for (Record record : records) {
          ObjectNode row = rows.addObject();
          for (Types.NestedField field : table.schema().columns()) {
            Object value = record.getField(field.name());
            if (value instanceof ByteBuffer buffer) {
              byte[] bytes = new byte[buffer.remaining()];
              buffer.duplicate().get(bytes);
              value = bytes;
            }
            row.set(field.name(), json.valueToTree(value instanceof CharSequence ? value.toString() : value));
          }
        }
      }
    }
    System.out.println(json.writeValueAsString(rows));
  }
}
