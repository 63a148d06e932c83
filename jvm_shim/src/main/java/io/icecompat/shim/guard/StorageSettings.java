package io.icecompat.shim.guard;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * The session's object-store settings, handed to the rule service with a request about a table
 * outside the local file system.
 *
 * <p>Some work reads a table as a whole in the rule service: a metadata-only profile switch holds
 * every live file to the new profile there. That process is not a Spark driver: without help it
 * would reach the store with whatever its environment holds, which on a cluster configured through
 * {@code spark.hadoop.fs.s3a.*} is nothing, and the guard would refuse with a storage error instead
 * of the rule. Reading every live footer in the driver instead would tie every operation that reads
 * a table in the service to a reader of its own in the JVM; handing over the settings lets the
 * storage layer, which already maps these keys (per bucket and account), read with exactly the
 * credentials and endpoint the session's connectors use.
 *
 * <p>Sent: every {@code fs.s3a.*}, {@code fs.azure.*} and {@code fs.gs.*} key of the configuration
 * Delta uses for the table (Spark's {@code spark.hadoop.*}, session overrides, per-table options),
 * values expanded, secrets resolved through Hadoop's credential providers. They go over the service's
 * private stdin pipe only; neither side writes them to a log, a file or a message.
 */
final class StorageSettings {
  private static final String[] PREFIXES = {"fs.s3a.", "fs.azure.", "fs.gs."};

  private StorageSettings() {}

  /** Adds {@code hadoop} to {@code req} when {@code root} is not on the local file system. */
  static void attach(ObjectNode req, Path root, Configuration conf) {
    if (CommitFacts.readLocally(root)) {
      return;
    }
    ObjectNode out = req.putObject(ServiceMessages.HADOOP);
    values(conf).forEach(out::put);
  }

  /** The object-store keys of {@code conf} with their effective values, sorted by key. */
  static Map<String, String> values(Configuration conf) {
    Map<String, String> out = new TreeMap<>();
    for (Map.Entry<String, String> e : conf) {
      String key = e.getKey();
      if (!wanted(key)) {
        continue;
      }
      String value = resolved(conf, key);
      if (value != null) {
        out.put(key, value);
      }
    }
    return out;
  }

  private static boolean wanted(String key) {
    for (String prefix : PREFIXES) {
      if (key.startsWith(prefix)) {
        return true;
      }
    }
    return false;
  }

  /** A key's value as the connectors see it: a credential provider's entry first, then the conf. */
  private static String resolved(Configuration conf, String key) {
    try {
      char[] secret = conf.getPassword(key);
      if (secret != null) {
        return new String(secret);
      }
    } catch (IOException e) {
      // a provider that cannot be read: the connectors fall back to the configuration value too
    }
    return conf.get(key);
  }
}
