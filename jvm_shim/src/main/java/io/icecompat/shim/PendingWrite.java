package io.icecompat.shim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.fs.FileSystem;
import io.icecompat.shim.guard.Guard;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.delta.DeltaCommitTag;
import org.apache.spark.sql.delta.DeltaLog;
import org.apache.spark.sql.delta.DeltaOperations;
import org.apache.spark.sql.delta.DeltaOptions;
import org.apache.spark.sql.delta.OptimisticTransaction;
import org.apache.spark.sql.delta.RowTracking;
import org.apache.spark.sql.delta.Snapshot;
import org.apache.spark.sql.delta.SnapshotDescriptor;
import org.apache.spark.sql.delta.actions.Action;
import org.apache.spark.sql.delta.actions.AddFile;
import org.apache.spark.sql.delta.actions.FileAction;
import org.apache.spark.sql.delta.actions.Metadata;
import org.apache.spark.sql.delta.actions.Protocol;
import org.apache.spark.sql.delta.actions.RemoveFile;
import org.apache.spark.sql.delta.actions.SetTransaction;
import org.apache.spark.sql.delta.commands.WriteIntoDelta;
import org.apache.spark.sql.delta.commands.WriteIntoDelta$;

/**
 * One write, held open across the Python calls that plan, verify and decide it.
 *
 * <p>The sequence is: {@link #open} starts a Delta transaction and exposes the snapshot it read; the
 * Python planner decides the compliant protocol and metadata from that snapshot; {@link #write}
 * puts them on the transaction and writes the data files (nothing is committed); Python reads the
 * new files' footers and checks the file-level rules; then {@link #commit} or {@link #abort}.
 * Because the plan is made from the transaction's own read snapshot, Delta's optimistic
 * concurrency check at commit time is a check of the plan against the latest table: a conflicting
 * concurrent change fails the commit and the caller re-plans.
 */
public final class PendingWrite {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final SparkSession spark;
  private final DeltaLog log;
  private final OptimisticTransaction txn;
  private final String location;
  private final List<Action> actions = new ArrayList<>();
  private final List<String> writtenPaths = new ArrayList<>();
  private SaveMode saveMode = SaveMode.Append;
  private scala.Option<scala.collection.immutable.Seq<String>> partitionBy = scala.Option.empty();
  private scala.Option<String> predicate = scala.Option.empty();
  private boolean written;
  private boolean finished;
  private boolean preservedRowTracking;

  private PendingWrite(SparkSession spark, String location) {
    this.spark = spark;
    this.location = location;
    this.log = DeltaLog.forTable(spark, new Path(location));
    this.txn = log.startTransaction();
  }

  /** Starts a transaction on the table at {@code location} (which need not exist yet). */
  public static PendingWrite open(SparkSession spark, String location) {
    ShimInfo.requireSupportedDelta();
    // Delta looks the session up per thread; a write from a new Python thread has none yet.
    SparkSession.setActiveSession(spark);
    return new PendingWrite(spark, location);
  }

  /** The version the transaction read, -1 for a table that does not exist yet. */
  public long readVersion() {
    return txn.readVersion();
  }

  /** The highest version committed for {@code appId}, -1 when none (Delta's idempotent writes). */
  public long txnVersion(String appId) {
    return txn.txnVersion(appId);
  }

  /** The read snapshot's protocol and metadata as log-action JSON, or {@code {}} for a new table. */
  public String snapshotJson() throws IOException {
    ObjectNode out = JSON.createObjectNode();
    out.put("version", txn.readVersion());
    if (txn.readVersion() >= 0) {
      Snapshot snap = txn.snapshot();
      out.set("protocol", JSON.readTree(snap.protocol().json()).get("protocol"));
      out.set("metaData", JSON.readTree(snap.metadata().json()).get("metaData"));
    }
    return JSON.writeValueAsString(out);
  }

  /**
   * Applies the planned protocol and metadata and writes the data files. Returns {@code {"added":
   * [AddFile...], "removed": n}}: the AddFile actions as they will be committed and how many files
   * the write removes. Nothing is committed here.
   *
   * @param requestJson {@code {"mode": "append"|"overwrite", "replaceSchema": bool, "protocol": {..},
   *     "metaData": {..}, "metadataChanged": bool, "options": {..}, "txnAppId": s, "txnVersion": n}}
   */
  public String write(Dataset<Row> data, String requestJson) throws IOException {
    if (written || finished) {
      throw new IllegalStateException("this PendingWrite has already written its files");
    }
    written = true;
    SparkSession.setActiveSession(spark);
    Guard.enterTrusted();
    try {
      return writeTrusted(data, requestJson);
    } finally {
      Guard.exitTrusted();
    }
  }

  // Planned and verified by the Python side itself: the session guard must not redo it.
  private String writeTrusted(Dataset<Row> data, String requestJson) throws IOException {
    JsonNode req = JSON.readTree(requestJson);
    String mode = req.path("mode").asText("append");
    boolean overwrite = "overwrite".equals(mode);
    boolean replaceSchema = req.path("replaceSchema").asBoolean(false);
    saveMode = overwrite ? SaveMode.Overwrite : SaveMode.Append;

    Metadata metadata = (Metadata) Action.fromJson(wrap("metaData", req.get("metaData")));
    Protocol protocol = (Protocol) Action.fromJson(wrap("protocol", req.get("protocol")));
    partitionBy = scala.Option.apply(Scala.seq(list(metadata.partitionColumns())));

    boolean newTable = txn.readVersion() < 0;
    if (!newTable) {
      applyPlannedProtocol(protocol);
    }
    if (newTable) {
      txn.updateMetadataForNewTable(metadata);
    } else if (req.path("metadataChanged").asBoolean(true)) {
      if (replaceSchema) {
        txn.updateMetadataForTableOverwrite(metadata);
      } else {
        txn.updateMetadata(metadata, false);
      }
    }
    applyPlannedProtocol(protocol);

    Map<String, String> options = new HashMap<>();
    req.path("options").fields().forEachRemaining(e -> options.put(e.getKey(), e.getValue().asText()));
    // Schema handling was decided by the planner; idempotency is handled here, once.
    options.remove("mergeSchema");
    options.remove("overwriteSchema");
    options.remove("txnAppId");
    options.remove("txnVersion");
    predicate = scala.Option.apply(options.get("replaceWhere"));

    List<Action> produced = new ArrayList<>();
    if (newTable || replaceSchema) {
      DeltaOptions deltaOptions = new DeltaOptions(Scala.map(options), spark.sessionState().conf());
      for (FileAction a : iter(txn.writeFiles(data, scala.Option.apply(deltaOptions)))) {
        produced.add(a);
      }
      if (overwrite && !newTable) {
        long now = System.currentTimeMillis();
        for (AddFile f : iter(txn.filterFiles())) {
          produced.add(f.removeWithTimestamp(now, true));
        }
      }
    } else {
      DeltaOptions deltaOptions = new DeltaOptions(Scala.map(options), spark.sessionState().conf());
      WriteIntoDelta command =
          WriteIntoDelta$.MODULE$.apply(
              log,
              saveMode,
              deltaOptions,
              Scala.seq(list(metadata.partitionColumns())),
              Scala.map(new HashMap<>()),
              data,
              WriteIntoDelta$.MODULE$.apply$default$7(),
              WriteIntoDelta$.MODULE$.apply$default$8(),
              WriteIntoDelta$.MODULE$.apply$default$9());
      for (Action a : iter(command.write(txn, spark, command.write$default$3(), false))) {
        produced.add(a);
      }
    }
    if (req.hasNonNull("txnAppId") && req.hasNonNull("txnVersion")) {
      produced.add(
          new SetTransaction(
              req.get("txnAppId").asText(),
              req.get("txnVersion").asLong(),
              scala.Option.apply((Object) System.currentTimeMillis())));
    }
    actions.addAll(produced);

    ArrayNode added = JSON.createArrayNode();
    int removed = 0;
    for (Action a : produced) {
      if (a instanceof AddFile add) {
        writtenPaths.add(add.path());
        added.add(JSON.readTree(add.json()).get("add"));
      } else if (a instanceof RemoveFile) {
        removed++;
      }
    }
    ObjectNode out = JSON.createObjectNode();
    out.set("added", added);
    out.put("removed", removed);
    return JSON.writeValueAsString(out);
  }

  /**
   * Rewrites data files of the read snapshot under the planned protocol and metadata (an upgrade);
   * nothing is committed. The rows of exactly the files named are read through Delta (their
   * deletion vectors applied, their row ids kept when row tracking is enabled), written under the
   * new metadata, and the originals removed; files named in {@code recommit} are re-added unchanged
   * so that Delta gives them row ids and commit versions (the row-tracking backfill). Files added
   * or removed here do not change data ({@code dataChange=false}). Commit with {@link
   * #commitUpgrade}.
   *
   * @param requestJson {@code {"protocol": {..}, "metaData": {..}, "metadataChanged": bool,
   *     "newTableState": bool, "rewrite": [path..], "recommit": [path..]}}; paths as the log writes
   *     them. With {@code newTableState} every file is rewritten and the metadata is applied as for
   *     a replaced table: the only way Delta lets a table's column mapping move to {@code id} mode.
   * @return {@code {"added": [AddFile...], "removed": n, "recommitted": n}}: the new files only
   */
  public String rewrite(String requestJson) throws IOException {
    Guard.enterTrusted();
    try {
      return rewriteTrusted(requestJson);
    } finally {
      Guard.exitTrusted();
    }
  }

  // Planned by the Python upgrade from the rule catalog: the session guard must not redo it.
  private String rewriteTrusted(String requestJson) throws IOException {
    if (written || finished) {
      throw new IllegalStateException("this PendingWrite has already written its files");
    }
    if (txn.readVersion() < 0) {
      throw new IllegalStateException("there is no Delta table at " + location);
    }
    written = true;
    SparkSession.setActiveSession(spark);
    JsonNode req = JSON.readTree(requestJson);
    Metadata metadata = (Metadata) Action.fromJson(wrap("metaData", req.get("metaData")));
    Protocol protocol = (Protocol) Action.fromJson(wrap("protocol", req.get("protocol")));
    boolean newTableState = req.path("newTableState").asBoolean(false);
    Set<String> rewrite = texts(req.path("rewrite"));
    Set<String> recommit = texts(req.path("recommit"));

    Snapshot snap = txn.snapshot();
    List<AddFile> toRewrite = new ArrayList<>();
    List<AddFile> toRecommit = new ArrayList<>();
    Set<String> live = new HashSet<>();
    for (AddFile f : iter(txn.filterFiles())) { // the whole table is read: a concurrent add conflicts
      live.add(f.path());
      if (newTableState || rewrite.contains(f.path())) {
        toRewrite.add(f);
      }
    }
    if (!newTableState && !recommit.isEmpty()) {
      // filterFiles() leaves out the statistics; a re-added file must keep all of them.
      Object[] paths = recommit.toArray();
      for (AddFile f : snap.allFiles().where(functions.col("path").isin(paths)).collectAsList()) {
        toRecommit.add(f);
      }
    }
    for (Set<String> asked : List.of(rewrite, recommit)) {
      for (String p : asked) {
        if (!live.contains(p)) {
          throw new IllegalStateException(
              "not a live file of version " + txn.readVersion() + " of " + location + ": " + p);
        }
      }
    }
    if (toRecommit.size() != (newTableState ? 0 : recommit.size())) {
      throw new IllegalStateException("could not read the AddFiles of " + recommit + " in " + location);
    }
    preservedRowTracking = RowTracking.isEnabled(snap.protocol(), snap.metadata());
    Dataset<Row> data = log.createDataFrame(snap, Scala.seq(toRewrite), false, scala.Option.apply("upgrade"));
    if (preservedRowTracking) {
      // Rows keep their row ids and commit versions, written as the planned state wants them
      // (under IcebergCompatV3 with Iceberg's reserved field ids on the materialized columns).
      data = RowTracking.preserveRowTrackingColumns(data, new PlannedState(snap, protocol, metadata));
    }

    if (!newTableState) {
      applyPlannedProtocol(protocol);
    }
    if (newTableState) {
      txn.updateMetadataForNewTable(metadata);
    } else if (req.path("metadataChanged").asBoolean(true)) {
      txn.updateMetadata(metadata, false);
    }
    applyPlannedProtocol(protocol);

    List<Action> produced = new ArrayList<>();
    ArrayNode added = JSON.createArrayNode();
    if (!toRewrite.isEmpty()) {
      DeltaOptions options = new DeltaOptions(Scala.map(new HashMap<>()), spark.sessionState().conf());
      List<org.apache.spark.sql.delta.constraints.Constraint> none = List.of();
      for (FileAction a : iter(txn.writeFiles(data, scala.Option.apply(options), true, Scala.seq(none)))) {
        if (a instanceof AddFile add) {
          AddFile unchanged = withoutDataChange(add);
          writtenPaths.add(unchanged.path());
          added.add(JSON.readTree(unchanged.json()).get("add"));
          produced.add(unchanged);
        } else {
          produced.add(a);
        }
      }
      long now = System.currentTimeMillis();
      for (AddFile f : toRewrite) {
        produced.add(f.removeWithTimestamp(now, false));
      }
    }
    for (AddFile f : toRecommit) {
      produced.add(withoutDataChange(f));
    }
    actions.addAll(produced);

    ObjectNode out = JSON.createObjectNode();
    out.set("added", added);
    out.put("removed", toRewrite.size());
    out.put("recommitted", toRecommit.size());
    return JSON.writeValueAsString(out);
  }

  /**
   * Commits what {@link #rewrite} produced as Delta's {@code REORG TABLE UPGRADE UNIFORM} operation
   * (the history shows the properties the upgrade set); returns the committed version.
   *
   * @param propertiesJson the table properties the upgrade set or changed, {@code {"key": "value"}}
   */
  public long commitUpgrade(String propertiesJson) throws IOException {
    if (!written || finished) {
      throw new IllegalStateException("nothing to commit: call rewrite() once before commitUpgrade()");
    }
    Map<String, String> properties = new HashMap<>();
    JSON.readTree(propertiesJson == null ? "{}" : propertiesJson)
        .fields()
        .forEachRemaining(e -> properties.put(e.getKey(), e.getValue().asText()));
    Map<String, String> tags = new HashMap<>();
    if (preservedRowTracking) {
      tags.put(DeltaCommitTag.PreservedRowTrackingTag$.MODULE$.key(), "true");
    }
    finished = true;
    SparkSession.setActiveSession(spark);
    Guard.enterTrusted();
    try {
      return txn.commit(
          Scala.seq(actions),
          new DeltaOperations.UpgradeUniformProperties(Scala.map(properties)),
          Scala.map(tags));
    } finally {
      Guard.exitTrusted();
    }
  }

  /**
   * Makes the planned protocol the transaction's protocol. Called before the metadata update too:
   * delta-spark's updateMetadata checks the new schema against the transaction's protocol (the
   * snapshot's until one is set), so a column that needs a feature not every table may turn on by
   * itself (timestampNtz) is refused with DELTA_FEATURES_REQUIRE_MANUAL_ENABLEMENT unless the
   * planned protocol, which adds it, is already in place. Called again after, because updateMetadata
   * may replace the protocol (a new table gets Protocol.forNewTable) and the plan is what commits.
   * A new table gets it only after: delta-spark assigns a new table's protocol from its metadata
   * whatever was set before, and checks that metadata against no protocol of the table's own.
   */
  private void applyPlannedProtocol(Protocol protocol) {
    if (!protocol.equals(txn.protocol())) {
      txn.updateProtocol(protocol);
    }
  }

  /** The read snapshot as it will be once the planned protocol and metadata are committed. */
  private static final class PlannedState implements SnapshotDescriptor {
    private final Snapshot read;
    private final Protocol protocol;
    private final Metadata metadata;

    PlannedState(Snapshot read, Protocol protocol, Metadata metadata) {
      this.read = read;
      this.protocol = protocol;
      this.metadata = metadata;
    }

    @Override
    public DeltaLog deltaLog() {
      return read.deltaLog();
    }

    @Override
    public long version() {
      return read.version();
    }

    @Override
    public Metadata metadata() {
      return metadata;
    }

    @Override
    public Protocol protocol() {
      return protocol;
    }

    @Override
    public Path logPath() {
      return read.logPath();
    }

    @Override
    public scala.Option<Object> numOfFilesIfKnown() {
      return read.numOfFilesIfKnown();
    }

    @Override
    public scala.Option<Object> sizeInBytesIfKnown() {
      return read.sizeInBytesIfKnown();
    }

    @Override
    public scala.collection.immutable.Map<com.databricks.spark.util.TagDefinition, String> getCommonTags() {
      return read.getCommonTags();
    }
  }

  /** {@code add} as a rewrite commits it: the same file, not a change of the table's data. */
  private static AddFile withoutDataChange(AddFile add) {
    return add.copy(
        add.copy$default$1(),
        add.copy$default$2(),
        add.copy$default$3(),
        add.copy$default$4(),
        false,
        add.copy$default$6(),
        add.copy$default$7(),
        add.copy$default$8(),
        add.copy$default$9(),
        add.copy$default$10(),
        add.copy$default$11(),
        add.copy$default$12(),
        add.copy$default$13());
  }

  private static Set<String> texts(JsonNode array) {
    Set<String> out = new LinkedHashSet<>();
    if (array != null && array.isArray()) {
      array.forEach(n -> out.add(n.asText()));
    }
    return out;
  }

  /** The table's root location (as given to {@link #open}). */
  public String location() {
    return location;
  }

  /** Commits what {@link #write} produced; returns the committed version. */
  public long commit(String operationJson) throws IOException {
    if (!written || finished) {
      throw new IllegalStateException("nothing to commit: call write() once before commit()");
    }
    JsonNode op = JSON.readTree(operationJson == null ? "{}" : operationJson);
    scala.Option<String> userMetadata =
        op.hasNonNull("userMetadata") ? scala.Option.apply(op.get("userMetadata").asText()) : scala.Option.empty();
    DeltaOperations.Write operation =
        new DeltaOperations.Write(
            saveMode,
            partitionBy,
            predicate,
            userMetadata,
            scala.Option.empty(),
            scala.Option.empty(),
            scala.Option.empty(),
            scala.Option.empty(),
            scala.Option.empty());
    finished = true;
    SparkSession.setActiveSession(spark);
    Guard.enterTrusted();
    try {
      return txn.commit(Scala.seq(actions), operation);
    } finally {
      Guard.exitTrusted();
    }
  }

  /** Deletes the data files this write created (only those); the table's log is never touched. */
  public int abort() throws IOException {
    finished = true;
    int deleted = 0;
    Path root = new Path(location);
    FileSystem fs = root.getFileSystem(spark.sessionState().newHadoopConf());
    for (String p : writtenPaths) {
      if (fs.delete(resolve(root, p), false)) {
        deleted++;
      }
    }
    return deleted;
  }

  /** An AddFile path (URL-encoded, relative to the root or absolute) as a Hadoop path. */
  private static Path resolve(Path root, String addPath) throws IOException {
    try {
      Path child = new Path(new java.net.URI(addPath));
      return child.isAbsolute() ? child : new Path(root, child);
    } catch (java.net.URISyntaxException e) {
      throw new IOException("not a valid AddFile path: " + addPath, e);
    }
  }

  private static String wrap(String key, JsonNode value) throws IOException {
    ObjectNode node = JSON.createObjectNode();
    node.set(key, value);
    return JSON.writeValueAsString(node);
  }

  private static <T> List<T> list(scala.collection.Iterable<T> seq) {
    List<T> out = new ArrayList<>();
    for (T item : iter(seq)) {
      out.add(item);
    }
    return out;
  }

  private static <T> Iterable<T> iter(scala.collection.Iterable<T> seq) {
    Iterator<T> it = scala.jdk.javaapi.CollectionConverters.asJava(seq.iterator());
    return () -> it;
  }
}
