package io.icecompat.shim.guard;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The writer profile a table state is held to, read from its Delta JSON alone: the Java twin of
 * {@code icecompat_writer.rules.detection.held_profile} restricted to the writer profiles. The guard
 * needs it without the rule service in a session that switched the guard off (such a session starts
 * no service process), so it is derived here; {@code tests/guard/test_writer_profile.py} runs {@link
 * #of} and {@code held_profile} over the same table states and requires the same answers.
 */
public final class WriterProfile {
  // property -> profile, most specific first (as detection._DECLARING_PROPERTIES)
  private static final String[][] DECLARING = {
    {"delta.enableIcebergWriterCompatV3", "writer-v3"},
    {"delta.enableIcebergWriterCompatV1", "writer-v1"},
  };
  // writer feature -> profile, most specific first (as detection._HOLDING_FEATURES)
  private static final String[][] HOLDING = {
    {"icebergWriterCompatV3", "writer-v3"},
    {"icebergWriterCompatV1", "writer-v1"},
  };

  private WriterProfile() {}

  /**
   * The writer profile a table state declares (through its properties or the writer-compat feature
   * its protocol lists), or null. These tables exist only because the driver agent taught delta-spark
   * their properties; delta-spark alone would write them without ids, physical names or the
   * timestamp encoding the profile needs, so a session that opted out of the guard must not touch
   * them. {@code protocol} and {@code metadata} are the log's JSON objects, either may be null.
   */
  public static String of(JsonNode protocol, JsonNode metadata) {
    JsonNode conf = metadata == null ? null : metadata.path("configuration");
    if (conf != null) {
      for (String[] declaring : DECLARING) {
        if ("true".equalsIgnoreCase(conf.path(declaring[0]).asText("").trim())) {
          return declaring[1];
        }
      }
    }
    if (protocol != null) {
      for (String[] holding : HOLDING) {
        for (JsonNode f : protocol.path("writerFeatures")) {
          if (holding[0].equals(f.asText())) {
            return holding[1];
          }
        }
      }
    }
    return null;
  }
}
