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
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntConsumer;
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
 * base64, or an {@code error}). Only files inside the table root are opened; the footers are read
 * in parallel, one ranged tail read each (see {@link #footer}).
 */
final class CommitFacts {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final byte[] MAGIC = {'P', 'A', 'R', '1'};
  /** A footer larger than this is reported as unreadable instead of being shipped. */
  private static final int MAX_FOOTER = 64 << 20;
  /** Bytes read from a file's end in one request: the footer of a typical data file fits. */
  private static final int TAIL = 64 << 10;
  /** At most this many footers are read at once for one commit. */
  private static final int MAX_READERS = 16;

  private CommitFacts() {}

  /** Whether the rule service reads {@code root}'s files itself (the local file system). */
  static boolean readLocally(Path root) {
    String scheme = root.toUri().getScheme();
    return scheme == null || "file".equalsIgnoreCase(scheme);
  }

  /**
   * The add paths of a commit's actions with the sizes their AddFiles record (-1 when absent): the
   * size lets each footer be read with one ranged read of the file's tail, without asking the store
   * for the object's length first.
   */
  static Map<String, Long> addSizes(List<String> actions) throws IOException {
    Map<String, Long> out = new LinkedHashMap<>();
    for (String line : actions) {
      if (line.isBlank()) {
        continue;
      }
      JsonNode add = JSON.readTree(line).get("add");
      if (add != null && add.hasNonNull("path")) {
        out.put(add.get("path").asText(), add.path("size").asLong(-1));
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
      ObjectNode state = req.putObject(ServiceMessages.STATE);
      state.put("version", before.version());
      state.set("protocol", JSON.readTree(before.protocol().json()).get("protocol"));
      state.set("metadata", JSON.readTree(before.metadata().json()).get("metaData"));
    } else {
      req.putNull(ServiceMessages.STATE);
    }
    ObjectNode footers = req.putObject(ServiceMessages.FOOTERS);
    FileSystem fs = root.getFileSystem(hadoopConf);
    Map<String, Long> adds = addSizes(actions);
    List<String> paths = new ArrayList<>(adds.keySet());
    String[] results = new String[paths.size()];
    boolean[] failed = new boolean[paths.size()];
    forEachBounded(paths.size(), i -> {
      String addPath = paths.get(i);
      Path file = resolve(root, addPath);
      if (file == null) {
        failed[i] = true;
        results[i] = "path " + addPath + " resolves outside the table root " + root + "; not opened";
        return;
      }
      try {
        results[i] = Base64.getEncoder().encodeToString(footer(fs, file, adds.get(addPath)));
      } catch (IOException | RuntimeException e) {
        failed[i] = true;
        results[i] = "cannot read the Parquet footer of " + file + ": " + e.getMessage();
      }
    });
    for (int i = 0; i < paths.size(); i++) {
      footers.putObject(paths.get(i)).put(failed[i] ? "error" : "footer", results[i]);
    }
  }

  /**
   * Runs {@code task} for 0..n-1 on a pool sized from {@code n} and capped at {@value #MAX_READERS}:
   * footer reads on an object store are each one round trip, so a commit of many files is bound by
   * latency, not by bandwidth or the driver's cores. The calling thread waits for all of them.
   */
  static void forEachBounded(int n, IntConsumer task) throws IOException {
    if (n <= 1) {
      for (int i = 0; i < n; i++) {
        task.accept(i);
      }
      return;
    }
    int threads = Math.min(n, MAX_READERS);
    ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
      Thread t = new Thread(r, "icecompat-footer-reader");
      t.setDaemon(true);
      return t;
    });
    try {
      List<Future<?>> futures = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        int index = i;
        futures.add(pool.submit(() -> task.accept(index)));
      }
      for (Future<?> f : futures) {
        f.get();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException("interrupted while reading the commit's Parquet footers");
    } catch (ExecutionException e) {
      throw new IOException("a footer reader failed: " + e.getCause(), e.getCause());
    } finally {
      pool.shutdownNow();
    }
  }

  private static Snapshot snapshot(SparkSession spark, Path root, long version) {
    DeltaLog log = DeltaLog.forTable(spark, root);
    return log.getSnapshotAt(version, log.getSnapshotAt$default$2(), log.getSnapshotAt$default$3(),
        log.getSnapshotAt$default$4());
  }

  /**
   * The footer (FileMetaData) bytes of one Parquet file of {@code size} bytes (as its AddFile
   * records; -1: ask the store): one ranged read of the file's last {@value #TAIL} bytes holds the
   * footer, its length and the magic for all but unusually large footers, which take one more read.
   * The file is opened with its length and the random-read policy, so a connector that honours
   * them (S3A's classic input stream) asks the store for no status and reads exactly the ranges
   * asked for. A wrong recorded size makes the read fail (no magic, or end of file): the commit is
   * refused, never passed.
   */
  static byte[] footer(FileSystem fs, Path file, long size) throws IOException {
    if (size < 0) {
      size = fs.getFileStatus(file).getLen();
    }
    if (size < 12) {
      throw new IOException(size + " bytes is too small for a Parquet file");
    }
    int tailLength = (int) Math.min(size, TAIL);
    byte[] tail = new byte[tailLength];
    FSDataInputStream in;
    try {
      in = fs.openFile(file)
          .optLong("fs.option.openfile.length", size)
          .opt("fs.option.openfile.read.policy", "random")
          .build()
          .get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException("interrupted while opening " + file);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
    }
    try (in) {
      in.readFully(size - tailLength, tail);
      for (int i = 0; i < 4; i++) {
        if (tail[tailLength - 4 + i] != MAGIC[i]) {
          throw new IOException("no Parquet magic at the end (not Parquet, encrypted or truncated)");
        }
      }
      int at = tailLength - 8;
      long length = (tail[at] & 0xFFL) | (tail[at + 1] & 0xFFL) << 8 | (tail[at + 2] & 0xFFL) << 16
          | (tail[at + 3] & 0xFFL) << 24;
      if (length <= 0 || length > size - 12 || length > MAX_FOOTER) {
        throw new IOException("footer length " + length + " does not fit a " + size + "-byte file");
      }
      byte[] footer = new byte[(int) length];
      if (length <= tailLength - 8) {
        System.arraycopy(tail, (int) (tailLength - 8 - length), footer, 0, (int) length);
      } else {
        in.readFully(size - 8 - length, footer);
      }
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
