package io.icecompat.shim.guard;

import com.fasterxml.jackson.databind.JsonNode;
import io.delta.storage.CloseableIterator;
import io.delta.storage.LogStore;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The guard's log store: the scheme's own Delta log store, with the guard's last check before every
 * commit file is written ({@link Guard#checkCommit}).
 *
 * <p>Every Delta commit, from any API, ends in {@code LogStore.write} of {@code <version>.json}: it
 * is the one point that sees the exact actions that would land, protocol, metadata and data files
 * included. Configured per scheme ({@code spark.delta.logStore.<scheme>.impl}), it hands every call
 * to that scheme's delegate ({@link LogStoreWiring}: S3SingleDriverLogStore for s3a, AzureLogStore,
 * GCSLogStore, HDFSLogStore, or the store named by {@code
 * spark.icecompat.guard.logStore.<scheme>.delegate}), so the storage guarantees (mutual exclusion,
 * atomic visibility) stay the delegate's. Other writes (checkpoints, {@code _last_checkpoint},
 * overwrites) pass through unchanged.
 *
 * <p>Once the delegate has written the commit file (the commit is final), a table whose properties
 * ask for Iceberg ({@code delta.universalFormat.enabledFormats} lists {@code iceberg}) is synced
 * ({@link Guard#syncAfterCommit}); a failed sync is logged and never fails the commit.
 */
public class GuardedLogStore extends LogStore {
  private final ConcurrentHashMap<String, LogStore> delegates = new ConcurrentHashMap<>();

  public GuardedLogStore(Configuration hadoopConf) {
    super(hadoopConf);
  }

  /** The delegate for {@code path}'s scheme (the default file system's when the path has none). */
  protected LogStore delegate(Path path, Configuration hadoopConf) {
    String scheme = path.toUri().getScheme();
    if (scheme == null) {
      scheme = FileSystem.getDefaultUri(hadoopConf).getScheme();
    }
    String key = scheme == null ? "file" : scheme.toLowerCase(Locale.ROOT);
    return delegates.computeIfAbsent(key, s -> LogStoreWiring.createDelegate(s, initHadoopConf()));
  }

  @Override
  public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
      throws IOException {
    LogStore store = delegate(path, hadoopConf);
    if (Boolean.TRUE.equals(overwrite) || !Guard.isCommitFile(path.getName())) {
      store.write(path, actions, overwrite, hadoopConf);
      return;
    }
    List<String> lines = new ArrayList<>();
    actions.forEachRemaining(lines::add);
    JsonNode checked = Guard.checkCommit(path, lines, hadoopConf);
    store.write(path, lines.iterator(), overwrite, hadoopConf);
    Guard.syncAfterCommit(path, checked, hadoopConf);
  }

  @Override
  public CloseableIterator<String> read(Path path, Configuration hadoopConf) throws IOException {
    return delegate(path, hadoopConf).read(path, hadoopConf);
  }

  @Override
  public Iterator<FileStatus> listFrom(Path path, Configuration hadoopConf) throws IOException {
    return delegate(path, hadoopConf).listFrom(path, hadoopConf);
  }

  @Override
  public Path resolvePathOnPhysicalStorage(Path path, Configuration hadoopConf) throws IOException {
    return delegate(path, hadoopConf).resolvePathOnPhysicalStorage(path, hadoopConf);
  }

  @Override
  public Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) throws IOException {
    return delegate(path, hadoopConf).isPartialWriteVisible(path, hadoopConf);
  }
}
