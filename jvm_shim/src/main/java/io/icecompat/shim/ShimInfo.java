package io.icecompat.shim;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * What this shim was built against, and the guard that refuses any other Delta version.
 *
 * <p>The shim reaches into delta-spark internals that carry no compatibility promise between
 * releases, so running it against a Delta build it was not compiled for must fail loudly at session
 * start instead of corrupting a table later.
 */
public final class ShimInfo {
  private ShimInfo() {}

  /** The delta-spark version this jar was built against (from its build properties). */
  public static String builtForDeltaVersion() {
    return buildValue("delta.version");
  }

  /** The Spark version this jar was built against (from its build properties). */
  public static String builtForSparkVersion() {
    return buildValue("spark.version");
  }

  /** The delta-spark version actually on the classpath, or {@code "unknown"}. */
  public static String runningDeltaVersion() {
    try {
      Package pkg = Class.forName("org.apache.spark.sql.delta.DeltaLog").getPackage();
      String v = pkg == null ? null : pkg.getImplementationVersion();
      return v == null ? "unknown" : v;
    } catch (ClassNotFoundException e) {
      return "not on classpath";
    }
  }

  /**
   * Throws {@link IllegalStateException} when the running delta-spark is not the one this shim was
   * built for.
   */
  public static void requireSupportedDelta() {
    String running = runningDeltaVersion();
    String expected = builtForDeltaVersion();
    if (!expected.equals(running)) {
      throw new IllegalStateException(
          "icecompat shim was built for delta-spark "
              + expected
              + " but the session runs delta-spark "
              + running
              + "; use the shim built for that Delta version");
    }
  }

  private static String buildValue(String key) {
    try (InputStream in = ShimInfo.class.getResourceAsStream("build.properties")) {
      if (in != null) {
        Properties props = new Properties();
        props.load(in);
        return props.getProperty(key, "unknown");
      }
    } catch (IOException e) {
      // fall through: unreadable build properties mean we cannot vouch for the build
    }
    return "unknown";
  }
}
