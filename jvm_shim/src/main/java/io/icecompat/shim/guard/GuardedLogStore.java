package io.icecompat.shim.guard;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * Delta's default log store for HDFS-like and local file systems, with the guard's last check
 * before every commit file is written ({@link Guard#checkCommit}).
 *
 * <p>Every Delta commit, from any API, ends in {@code LogStore.write} of {@code <version>.json}:
 * it is the one point that sees the exact actions that would land, protocol, metadata and data
 * files included. Configure it per scheme ({@code spark.delta.logStore.file.impl}); other writes
 * (checkpoints, {@code _last_checkpoint}, overwrites) pass through unchanged.
 */
public class GuardedLogStore extends io.delta.storage.HDFSLogStore {
  public GuardedLogStore(Configuration hadoopConf) {
    super(hadoopConf);
  }

  @Override
  public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
      throws IOException {
    if (Boolean.TRUE.equals(overwrite) || !Guard.isCommitFile(path.getName())) {
      super.write(path, actions, overwrite, hadoopConf);
      return;
    }
    List<String> lines = new ArrayList<>();
    actions.forEachRemaining(lines::add);
    Guard.checkCommit(path, lines, hadoopConf);
    super.write(path, lines.iterator(), overwrite, hadoopConf);
  }
}
