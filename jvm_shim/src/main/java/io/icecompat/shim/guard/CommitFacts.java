package io.icecompat.shim.guard;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.delta.DeltaLog;
import org.apache.spark.sql.delta.Snapshot;
import org.apache.spark.sql.functions;

/**
 * What the commit check needs from a table outside the local file system (s3a, abfss, gs, hdfs):
 * the rule service reads local tables itself, while for any other scheme the driver supplies the
 * facts through the session's own Hadoop file system and Delta's own snapshot, with the session's
 * credentials and endpoint, so the check sees exactly the storage the commit goes to.
 *
 * <p>Supplied per request: {@code state} (the protocol and metadata of version N-1, null for a new
 * table) and {@code footers} (per new data file, as its {@code add.path}: the Parquet footer bytes,
 * base64, or an {@code error}). Only files inside the table root are opened.
 */
final class CommitFacts {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final byte[] MAGIC = {'P', 'A', 'R', '1'};
  /** A footer larger than this is reported as unreadable instead of being shipped. */
  private static final int MAX_FOOTER = 64 << 20;

  private CommitFacts() {}

  /** Whether the rule service reads {@code root}'s files itself (the local file system). */
  static boolean readLocally(Path root) {
    String scheme = root.toUri().getScheme();
    return scheme == null || "file".equalsIgnoreCase(scheme);
  }

  /** The add paths of a commit's actions, as the log holds them. */
  static List<String> addPaths(List<String> actions) throws IOException {
    List<String> out = new ArrayList<>();
    for (String line : actions) {
      if (line.isBlank()) {
        continue;
      }
      JsonNode add = JSON.readTree(line).get("add");
      if (add != null && add.hasNonNull("path")) {
        out.add(add.get("path").asText());
      }
    }
    return out;
  }

  /** {@code add.path} resolved against the root; null when it leaves the table root. */
  static Path resolve(Path root, String addPath) {
    try {
      URI rootUri = root.toUri().normalize();
      URI child = new URI(addPath);
      Path p = child.isAbsolute() ? new Path(child) : new Path(root, new Path(child));
      URI resolved = p.toUri().normalize();
      String base = rootUri.toString().endsWith("/") ? rootUri.toString() : rootUri + "/";
      return resolved.toString().startsWith(base) && !resolved.getPath().contains("/../")
          ? new Path(resolved) : null;
    } catch (URISyntaxException | IllegalArgumentException e) {
      return null;
    }
  }

  /** Adds {@code state} and {@code footers} to a check_commit request for {@code root}. */
  static void supply(ObjectNode req, SparkSession spark, Path root, long version, List<String> actions,
      Configuration hadoopConf) throws IOException {
    if (version > 0) {
      Snapshot before = snapshot(spark, root, version - 1);
      ObjectNode state = req.putObject("state");
      state.put("version", before.version());
      state.set("protocol", JSON.readTree(before.protocol().json()).get("protocol"));
      state.set("metadata", JSON.readTree(before.metadata().json()).get("metaData"));
    } else {
      req.putNull("state");
    }
    ObjectNode footers = req.putObject("footers");
    FileSystem fs = root.getFileSystem(hadoopConf);
    for (String addPath : addPaths(actions)) {
      ObjectNode entry = footers.putObject(addPath);
      Path file = resolve(root, addPath);
      if (file == null) {
        entry.put("error", "path " + addPath + " resolves outside the table root " + root + "; not opened");
        continue;
      }
      try {
        entry.put("footer", Base64.getEncoder().encodeToString(footer(fs, file)));
      } catch (IOException e) {
        entry.put("error", "cannot read the Parquet footer of " + file + ": " + e.getMessage());
      }
    }
  }

  private static Snapshot snapshot(SparkSession spark, Path root, long version) {
    DeltaLog log = DeltaLog.forTable(spark, root);
    return log.getSnapshotAt(version, log.getSnapshotAt$default$2(), log.getSnapshotAt$default$3(),
        log.getSnapshotAt$default$4());
  }

  /** The footer (FileMetaData) bytes of one Parquet file: two ranged reads of its tail. */
  static byte[] footer(FileSystem fs, Path file) throws IOException {
    long size = fs.getFileStatus(file).getLen();
    if (size < 12) {
      throw new IOException(size + " bytes is too small for a Parquet file");
    }
    try (FSDataInputStream in = fs.open(file)) {
      byte[] tail = new byte[8];
      in.readFully(size - 8, tail);
      for (int i = 0; i < 4; i++) {
        if (tail[4 + i] != MAGIC[i]) {
          throw new IOException("no Parquet magic at the end (not Parquet, encrypted or truncated)");
        }
      }
      long length = (tail[0] & 0xFFL) | (tail[1] & 0xFFL) << 8 | (tail[2] & 0xFFL) << 16 | (tail[3] & 0xFFL) << 24;
      if (length <= 0 || length > size - 12 || length > MAX_FOOTER) {
        throw new IOException("footer length " + length + " does not fit a " + size + "-byte file");
      }
      byte[] footer = new byte[(int) length];
      in.readFully(size - 8 - length, footer);
      return footer;
    }
  }

  /**
   * Deletes a refused attempt's files, then each folder between them and the table root that the
   * deletions left empty (the attempt created it: Delta's random prefix and partition folders, or
   * the marker object an object store's connector leaves for a folder whose last file went).
   */
  static void deleteOwn(FileSystem fs, Path root, List<Path> files) throws IOException {
    String rootPath = root.toUri().getPath().replaceAll("/+$", "");
    Set<Path> seen = new HashSet<>();
    for (Path file : files) {
      fs.delete(file, false);
      for (Path dir = file.getParent(); dir != null; dir = dir.getParent()) {
        String p = dir.toUri().getPath();
        if (p.length() <= rootPath.length() || !p.startsWith(rootPath + "/")) {
          break;
        }
        seen.add(dir);
      }
    }
    List<Path> folders = new ArrayList<>(seen);
    folders.sort(Comparator.comparingInt((Path d) -> d.toUri().getPath().length()).reversed());
    for (Path dir : folders) { // deepest first
      try {
        if (fs.exists(dir) && fs.listStatus(dir).length == 0) {
          fs.delete(dir, false);
        }
      } catch (IOException e) {
        // a folder that cannot be inspected stays; the files are what matter
      }
    }
  }

  /**
   * Of the files a refused commit would add (the rule service's {@code delete}, as add paths), those
   * version N-1 does not already reference, resolved inside the root: the attempt's own files.
   */
  static List<Path> ownFiles(SparkSession spark, Path root, long version, JsonNode delete) {
    Map<String, Path> candidates = new LinkedHashMap<>();
    for (JsonNode p : delete) {
      Path file = resolve(root, p.asText());
      if (file != null) {
        candidates.put(p.asText(), file);
      }
    }
    if (version > 0 && !candidates.isEmpty()) {
      Set<String> known = new HashSet<>();
      Snapshot before = snapshot(spark, root, version - 1);
      for (Row r : before.allFiles().toDF().select("path")
          .where(functions.col("path").isin(candidates.keySet().toArray())).collectAsList()) {
        known.add(r.getString(0));
      }
      candidates.keySet().removeAll(known);
    }
    return new ArrayList<>(candidates.values());
  }
}
