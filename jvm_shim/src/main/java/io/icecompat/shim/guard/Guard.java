package io.icecompat.shim.guard;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.delta.DeltaLog;
import org.apache.spark.sql.delta.actions.Action;
import org.apache.spark.sql.delta.actions.Metadata;
import org.apache.spark.sql.delta.actions.Protocol;
import scala.Option;

/**
 * Where a guarded session's Delta writes meet the rules.
 *
 * <p>Two points see every Delta write, whatever API made it (SQL, DataFrameWriter V1/V2, Scala):
 * Delta's metadata update, reached through the driver agent's hook on {@code
 * DeltaColumnMapping.verifyAndUpdateMetadataChange} ({@link #beforeColumnMapping}), which runs
 * before any data file is written and is where the plan replaces Delta's proposal (ids, {@code
 * col-<id>} names, properties); and the commit, reached through {@link GuardedLogStore} ({@link
 * #checkCommit}), which validates the final protocol, metadata and new files before the commit file
 * exists. Both ask the {@link RuleService}: the rules run in one place.
 *
 * <p>A session is guarded unless {@value #ENABLED} is {@code false} and {@value #PROFILE} is
 * unset; such an opted-out session refuses writes to tables that declare a writer profile instead
 * of letting delta-spark write them unplanned, and a refused commit's files and the directories
 * made for them are removed. A guarded session whose pieces are not all in place (the session extension, the agent's hook, the
 * log store) fails its first guarded write with {@link GuardUnavailableException}: Spark only logs
 * a warning for an extension it could not load, and a guard that silently does nothing is worse
 * than none.
 */
public final class Guard {
  public static final String ENABLED = "spark.icecompat.guard.enabled";
  public static final String PROFILE = "spark.icecompat.profile";
  public static final String PYTHON = "spark.icecompat.python";
  /** System property the agent sets for the metadata hook: "patched" or "failed:...". */
  public static final String AGENT_GUARD_STATUS = "icecompat.agent.guard";
  /** System property the agent sets for Delta's pre-commit Iceberg step: "patched" or "failed:...". */
  public static final String AGENT_ICEBERG_STATUS = "icecompat.agent.iceberg";
  /** The agent's row-tracking high-water-mark hook (a cost, not a check: never in {@link #missing}). */
  public static final String AGENT_ROW_TRACKING_STATUS = "icecompat.agent.rowtracking";
  public static final String EXTENSION_CLASS = "io.icecompat.shim.guard.GuardExtension";
  public static final String LOG_STORE_CLASS = "io.icecompat.shim.guard.GuardedLogStore";

  private static final ObjectMapper JSON = new ObjectMapper();
  /** Session conf naming the pyiceberg catalog guarded syncs register tables in. */
  public static final String ICEBERG_CATALOG = "spark.icecompat.iceberg.catalog";
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Guard.class);
  /** Session conf: {@code commit} (default) or {@code async}, see {@link #syncMode}. */
  public static final String SYNC_MODE = "spark.icecompat.iceberg.sync";
  /** Session conf: how many rule service processes run Iceberg syncs beside the commit checks. */
  public static final String SYNC_PROCESSES = "spark.icecompat.iceberg.syncProcesses";
  static final int DEFAULT_SYNC_PROCESSES = 2;
  private static final java.util.Map<Integer, java.util.concurrent.ExecutorService> SYNC_QUEUES =
      new java.util.HashMap<>();
  private static final java.util.Map<String, java.util.TreeSet<Long>> PENDING = new java.util.TreeMap<>();
  private static final int SYNCS_KEPT = 1000;
  private static final java.util.ArrayDeque<JsonNode> SYNCS = new java.util.ArrayDeque<>();
  private static final ThreadLocal<int[]> TRUSTED = ThreadLocal.withInitial(() -> new int[1]);
  private static volatile boolean extensionLoaded;

  private Guard() {}

  /** Called by {@link GuardExtension} when Spark applies it to a session. */
  static void markExtensionLoaded() {
    extensionLoaded = true;
  }

  /**
   * Marks this thread as running a write that {@code compat_write} already planned and verifies
   * itself (the Python path): the guard does not check it a second time. Pair with {@link
   * #exitTrusted}.
   */
  public static void enterTrusted() {
    TRUSTED.get()[0]++;
  }

  public static void exitTrusted() {
    TRUSTED.get()[0]--;
  }

  static boolean trusted() {
    return TRUSTED.get()[0] > 0;
  }

  /** The session this thread works for (Delta sets it for its commands), or the default one. */
  static SparkSession session() {
    Option<SparkSession> active = SparkSession.getActiveSession();
    if (active.isDefined()) {
      return active.get();
    }
    Option<SparkSession> dflt = SparkSession.getDefaultSession();
    return dflt.isDefined() ? dflt.get() : null;
  }

  private static String conf(SparkSession spark, String key) {
    String v = spark.sessionState().conf().getConfString(key, "");
    return v == null ? "" : v.trim();
  }

  /**
   * Whether writes in {@code spark} are guarded: unless the session opted out ({@value #ENABLED} set
   * to false and no {@value #PROFILE}), a session with the package's jars holds every table that
   * declares a profile to it.
   */
  public static boolean guarded(SparkSession spark) {
    return spark != null && !optedOut(spark);
  }

  /** Whether {@code spark} switched the guard off explicitly. */
  static boolean optedOut(SparkSession spark) {
    return spark != null && "false".equalsIgnoreCase(conf(spark, ENABLED)) && conf(spark, PROFILE).isEmpty();
  }

  private static String optedOutRefusal(String profile, String table) {
    return "this session switched the icecompat guard off (" + ENABLED + "=false), and the table " + table
        + " declares the " + profile + " profile: delta-spark alone would write it without the column ids,"
        + " physical names and Parquet encodings the profile needs, so the write was refused. Turn the guard"
        + " on (spark.conf.set(\"" + ENABLED + "\", \"true\")) or write with compat_write";
  }

  /** The Python executable that runs the rule service for {@code spark}. */
  public static String python(SparkSession spark) {
    for (String key : new String[] {PYTHON, "spark.pyspark.driver.python", "spark.pyspark.python"}) {
      String v = conf(spark, key);
      if (!v.isEmpty()) {
        return v;
      }
    }
    for (String env : new String[] {"PYSPARK_DRIVER_PYTHON", "PYSPARK_PYTHON"}) {
      String v = System.getenv(env);
      if (v != null && !v.isBlank()) {
        return v.trim();
      }
    }
    return "python3";
  }

  /** What a guarded session lacks (empty when complete): one sentence per missing piece. */
  public static List<String> missing(SparkSession spark) {
    List<String> out = new ArrayList<>();
    // Loading Delta's column-mapping code is what lets the agent patch it: do it before asking.
    org.apache.spark.sql.delta.DeltaColumnMapping$.MODULE$.hashCode();
    if (!extensionLoaded) {
      out.add("the session extension " + EXTENSION_CLASS + " is not loaded: add it to spark.sql.extensions"
          + " after io.delta.sql.DeltaSparkSessionExtension (Spark only logs a warning when an extension"
          + " class cannot be loaded: check that icecompat-shim.jar is on spark.jars)");
    }
    String agent = System.getProperty(AGENT_GUARD_STATUS, "absent");
    if (!agent.startsWith("patched")) {
      out.add("the driver agent's metadata hook is not active (status: " + agent + "): start the driver"
          + " with -javaagent:<icecompat_writer/jars>/icecompat-agent.jar in spark.driver.extraJavaOptions");
    }
    out.addAll(LogStoreWiring.unguarded(spark.sparkContext().getConf()));
    return out;
  }

  /** {@link #missing} as JSON, with the settings the guard would use (for {@code icecompat doctor}). */
  public static String statusJson(SparkSession spark) throws IOException {
    List<String> missing = missing(spark);
    ObjectNode out = JSON.createObjectNode();
    out.put("guarded", guarded(spark));
    out.put("profile", conf(spark, PROFILE));
    out.put("python", python(spark));
    out.put("extension_loaded", extensionLoaded);
    out.put("agent_metadata_hook", System.getProperty(AGENT_GUARD_STATUS, "absent"));
    // the pre-commit Iceberg step is patched when Delta first loads its transaction class
    out.put("agent_iceberg_step", System.getProperty(AGENT_ICEBERG_STATUS, "absent"));
    // patched when Delta first loads RowId (the first commit or read of a row-tracking table)
    out.put("agent_row_tracking", System.getProperty(AGENT_ROW_TRACKING_STATUS, "absent"));
    missing.forEach(out.putArray("missing")::add);
    out.set("log_stores", LogStoreWiring.statusJson(spark.sparkContext().getConf()));
    try {
      JsonNode ping = RuleService.get(python(spark)).call(ServiceMessages.ping());
      out.put("service", "icecompat_writer " + ping.path(ServiceAnswers.VERSION).asText());
      out.put("service_ok", true);
    } catch (GuardUnavailableException e) {
      out.put("service", e.getMessage());
      out.put("service_ok", false);
    }
    return JSON.writeValueAsString(out);
  }

  /**
   * Refuses when the rule service found a profile for this write (the session's, or one the table
   * declares) and the guard is missing a piece: such a write must not land half-checked. Writes
   * no profile applies to are not guarded writes and pass.
   */
  private static void requireCompleteFor(SparkSession spark, JsonNode res) {
    String profile = res.path(ServiceAnswers.PROFILE).asText("");
    if (!profile.isEmpty() && !"null".equals(profile)) {
      requireComplete(spark);
    }
  }

  private static void requireComplete(SparkSession spark) {
    List<String> missing = missing(spark);
    if (!missing.isEmpty()) {
      throw new GuardUnavailableException(
          "this session is configured for the icecompat guard (" + ENABLED + " / " + PROFILE
              + ") but the guard is incomplete, so the write was refused: " + String.join("; ", missing));
    }
  }

  /**
   * The agent's hook, first statement of {@code verifyAndUpdateMetadataChange}: returns the metadata
   * Delta continues with. Unguarded sessions and trusted writes get {@code newMetadata} back as is.
   */
  public static Metadata beforeColumnMapping(
      SparkSession spark,
      DeltaLog log,
      Protocol oldProtocol,
      Metadata oldMetadata,
      Metadata newMetadata,
      boolean creating,
      boolean overwriteSchema) {
    if (trusted() || spark == null) {
      return newMetadata;
    }
    try {
      if (optedOut(spark)) {
        for (JsonNode[] state : new JsonNode[][] {
            {JSON.readTree(oldProtocol.json()).get("protocol"), JSON.readTree(oldMetadata.json()).get("metaData")},
            {null, JSON.readTree(newMetadata.json()).get("metaData")}}) {
          String profile = WriterProfile.of(state[0], state[1]);
          if (profile != null) {
            throw new GuardUnavailableException(optedOutRefusal(profile, log.dataPath().toString()));
          }
        }
        return newMetadata;
      }
      ObjectNode req = ServiceMessages.planMetadata(
          log.dataPath().toString(),
          conf(spark, PROFILE),
          creating,
          overwriteSchema,
          oldMetadata.schemaString() != null,
          JSON.readTree(oldProtocol.json()).get("protocol"),
          JSON.readTree(oldMetadata.json()).get("metaData"),
          JSON.readTree(newMetadata.json()).get("metaData"));
      CommandIntent.attach(req, spark); // an ALTER ... SET TBLPROPERTIES is judged as that command
      StorageSettings.attach(req, log.dataPath(), log.newDeltaHadoopConf());
      JsonNode res = RuleService.get(python(spark)).call(req);
      refuseIfViolated(res);
      requireCompleteFor(spark, res);
      JsonNode planned = res.get(ServiceAnswers.METADATA);
      if (planned == null || planned.isNull()) {
        return newMetadata;
      }
      ObjectNode wrapped = JSON.createObjectNode();
      wrapped.set("metaData", planned);
      return (Metadata) Action.fromJson(JSON.writeValueAsString(wrapped));
    } catch (IOException e) {
      throw new GuardUnavailableException("cannot exchange table metadata with the rule service: " + e, e);
    }
  }

  /**
   * The log store's hook: validates a commit before its file is written. On refusal, the data
   * files this commit would have added (and nothing else: the rule service names only files no
   * earlier version references) are deleted, so the table is left as it was.
   */
  static JsonNode checkCommit(Path commitFile, List<String> actions, Configuration hadoopConf)
      throws IOException {
    SparkSession spark = session();
    if (trusted() || spark == null) {
      return null;
    }
    Path logDir = commitFile.getParent();
    Path root = logDir.getParent();
    String name = commitFile.getName();
    long version = Long.parseLong(name.substring(0, name.indexOf('.')));
    boolean optedOut = optedOut(spark);
    if (optedOut && writerProfileOf(spark, root, actions) == null) {
      return null;
    }
    ObjectNode req = ServiceMessages.checkCommit(root.toString(), version, conf(spark, PROFILE), optedOut, actions);
    CommandIntent.attach(req, spark);
    boolean local = CommitFacts.readLocally(root);
    if (!local) {
      CommitFacts.supply(req, spark, root, version, actions, hadoopConf);
    }
    JsonNode res = RuleService.get(python(spark)).call(req);
    if (!res.path(ServiceAnswers.OK).asBoolean(false)) {
      FileSystem fs = root.getFileSystem(hadoopConf);
      List<Path> own = new ArrayList<>();
      if (local) {
        res.path(ServiceAnswers.DELETE).forEach(p -> own.add(new Path(p.asText())));
      } else {
        own.addAll(CommitFacts.ownFiles(spark, root, version, res.path(ServiceAnswers.DELETE)));
      }
      CommitFacts.deleteOwn(fs, root, own);
      if (version == 0) {
        deleteEmptyLog(fs, logDir); // the table whose first commit was refused never existed
      }
      if (optedOut && res.has(ServiceAnswers.PROFILE) && !res.has(ServiceAnswers.ERROR)) {
        throw new GuardUnavailableException(optedOutRefusal(res.path(ServiceAnswers.PROFILE).asText(), root.toString()));
      }
      refuseIfViolated(res);
    }
    requireCompleteFor(spark, res);
    return res;
  }

  /** Delta's own Iceberg converter, in the delta-iceberg module (absent from plain delta-spark). */
  static final String DELTA_ICEBERG_CONVERTER = "org.apache.spark.sql.delta.icebergShaded.IcebergConverter";

  private static volatile boolean deltaIcebergSeen;
  /** The Spark catalog name of the table this thread is committing: (log path, version, db.tbl). */
  private static final ThreadLocal<String[]> COMMITTING_NAME = new ThreadLocal<>();

  /**
   * The agent's hook at the start of Delta's pre-commit Iceberg step ({@code
   * OptimisticTransactionImpl.generateIcebergAndUpdateCurrentTransactionInfo}), which Delta runs for
   * every commit of a transaction opened for a Spark catalog table: remembers the table's catalog
   * name ({@code db.tbl}) for this thread's commit of {@code version}, so that the sync after that
   * commit registers the Iceberg table under the same name ({@link #syncAfterCommit}).
   */
  public static void beforeIcebergStep(
      org.apache.spark.sql.delta.util.TransactionHelper txn,
      long version,
      org.apache.spark.sql.catalyst.catalog.CatalogTable table) {
    COMMITTING_NAME.remove();
    if (table == null || txn == null) {
      return;
    }
    Option<String> database = table.identifier().database();
    if (database.isEmpty()) {
      return;
    }
    COMMITTING_NAME.set(new String[] {
        txn.deltaLog().logPath().toString(), Long.toString(version), database.get() + "." + table.identifier().table()});
  }

  /**
   * Replaces Delta's test {@code UniversalFormat.icebergEnabled(metadata)} inside its pre-commit
   * Iceberg step (the agent's rewrite): whether Delta itself converts this commit to Iceberg.
   *
   * <p>Delta converts only when the table asks for Iceberg and the transaction was opened for a
   * Spark catalog table, and then needs its converter from the delta-iceberg module; without that
   * module every such commit fails with {@code DELTA_MISSING_ICEBERG_CLASS}. When the module is
   * on the class path, or the session switched the guard off, Delta's behaviour is kept. Otherwise a
   * guarded session's log store syncs the Iceberg metadata right after the commit file is written
   * ({@link #syncAfterCommit}), as for tables written by path, and {@code compat_write} syncs its own
   * (trusted) commits: Delta's step yields "no conversion". A guarded session missing a piece (whose
   * commit would then not be synced) refuses with {@link GuardUnavailableException} naming it.
   */
  public static boolean deltaConvertsIceberg(
      org.apache.spark.sql.delta.UniversalFormat$ universalFormat, Metadata metadata) {
    boolean enabled = universalFormat.icebergEnabled(metadata);
    if (!enabled || deltaIcebergPresent()) {
      return enabled;
    }
    if (trusted()) {
      return false;
    }
    SparkSession spark = session();
    if (spark == null || optedOut(spark)) {
      return true;
    }
    requireComplete(spark);
    return false;
  }

  /** Whether Delta's own Iceberg converter can be loaded (as delta-spark looks it up). */
  static boolean deltaIcebergPresent() {
    if (deltaIcebergSeen) {
      return true;
    }
    ClassLoader[] loaders = {
      Thread.currentThread().getContextClassLoader(), org.apache.spark.sql.delta.UniversalFormat$.class.getClassLoader()};
    for (ClassLoader loader : loaders) {
      if (loader == null) {
        continue;
      }
      try {
        Class.forName(DELTA_ICEBERG_CONVERTER, false, loader);
        deltaIcebergSeen = true;
        return true;
      } catch (ClassNotFoundException | LinkageError e) {
        // not in this loader
      }
    }
    return false;
  }

  /** The catalog name {@link #beforeIcebergStep} recorded for this thread's commit file, or null. */
  private static String committingName(Path commitFile, long version) {
    String[] named = COMMITTING_NAME.get();
    COMMITTING_NAME.remove();
    if (named == null || !named[1].equals(Long.toString(version))) {
      return null;
    }
    Path logDir = commitFile.getParent();
    return new Path(named[0]).toUri().normalize().equals(logDir.toUri().normalize()) ? named[2] : null;
  }

  /**
   * After the delegate wrote {@code commitFile} (the commit is final): when the rule service's answer
   * to {@link #checkCommit} carries {@code sync} (the table's properties ask for Iceberg), asks the
   * service to bring the table's Iceberg metadata and catalog up to this version. Never throws: a
   * failed sync is logged as a warning and kept in {@link #icebergSyncs}, the Delta commit stands, and
   * the next sync converts every version after the last converted one. Trusted writes ({@code
   * compat_write}) get no answer from {@link #checkCommit}, so they are not synced here: they sync
   * themselves. For a table on an object store the request carries the session's storage settings
   * ({@link StorageSettings}), as the service has no Spark session of its own.
   */
  static void syncAfterCommit(Path commitFile, JsonNode checked, Configuration hadoopConf) {
    String name = commitFile.getName();
    long version = Long.parseLong(name.substring(0, name.indexOf('.')));
    String identifier = committingName(commitFile, version);
    JsonNode wanted = checked == null ? null : checked.get(ServiceAnswers.SYNC);
    if (wanted == null || wanted.isNull()) {
      return;
    }
    SparkSession spark = session();
    String table = commitFile.getParent().getParent().toString();
    ObjectNode outcome = JSON.createObjectNode();
    outcome.put("table", table);
    outcome.put("version", version);
    long started = System.nanoTime();
    ObjectNode req;
    String python;
    int processes;
    boolean async;
    try {
      if (identifier == null && version == 0 && spark != null) {
        identifier = CommandIntent.createdTable(spark); // a CREATE: Delta's transaction has no catalog table yet
      }
      if (identifier != null) {
        outcome.put("identifier", identifier);
      }
      req = ServiceMessages.sync(
          table, version, spark == null ? "" : conf(spark, ICEBERG_CATALOG), wanted, identifier);
      // an object-store table is read and written by the service with the session's own settings
      StorageSettings.attach(req, commitFile.getParent().getParent(), hadoopConf);
      python = python(spark);
    } catch (RuntimeException e) { // the commit file exists: nothing may turn it into a failed commit
      outcome.put("error", "Delta version " + version + " of " + table + " committed; its Iceberg sync"
          + " failed (" + e.getMessage() + "); the next sync catches up");
      record(outcome, started);
      return;
    }
    try {
      processes = syncProcesses(spark);
      async = "async".equals(syncMode(spark));
    } catch (GuardUnavailableException e) { // a bad setting: this sync runs as in the default mode, said loudly
      processes = DEFAULT_SYNC_PROCESSES;
      async = false;
      outcome.put("setting", e.getMessage());
      LOG.warn(e.getMessage() + "; this sync ran before the write returned");
    }
    outcome.put("mode", async ? "async" : "commit");
    if (!async) {
      runSync(req, python, processes, table, version, outcome, started);
      return;
    }
    pending(table, version, +1);
    final ObjectNode request = req;
    final String executable = python;
    final int count = processes;
    try {
      syncExecutor(table, processes).execute(() -> {
        try {
          runSync(request, executable, count, table, version, outcome, started);
        } finally {
          pending(table, version, -1);
        }
      });
    } catch (RuntimeException e) { // a rejected task: recorded as a failed sync, the next one catches up
      pending(table, version, -1);
      outcome.put("error", "Delta version " + version + " of " + table + " committed; its Iceberg sync"
          + " could not be queued (" + e.getMessage() + "); the next sync catches up");
      record(outcome, started);
    }
  }

  /** Runs one sync in {@code table}'s sync process and records its outcome; never throws. */
  private static void runSync(
      ObjectNode req, String python, int processes, String table, long version, ObjectNode outcome, long started) {
    try {
      JsonNode res = RuleService.forSync(python, table, processes).call(req);
      outcome.set("converted_version", res.path(ServiceAnswers.CONVERTED_VERSION));
      if (!res.path(ServiceAnswers.OK).asBoolean(false)) {
        outcome.put("error", res.path(ServiceAnswers.WARNING).asText("the Iceberg sync failed"));
      }
    } catch (RuntimeException e) { // the commit file exists: nothing may turn it into a failed commit
      outcome.put("error", "Delta version " + version + " of " + table + " committed; its Iceberg sync"
          + " failed (" + e.getMessage() + "); the next sync catches up");
    }
    record(outcome, started);
  }

  private static void record(ObjectNode outcome, long started) {
    outcome.put("millis", (System.nanoTime() - started) / 1_000_000.0);
    if (outcome.has("error")) {
      LOG.warn(outcome.get("error").asText());
    }
    synchronized (SYNCS) {
      SYNCS.addLast(outcome);
      while (SYNCS.size() > SYNCS_KEPT) {
        SYNCS.removeFirst();
      }
    }
  }

  /**
   * The session's {@value #SYNC_MODE}: {@code commit} (the default: the write returns once its
   * Iceberg sync ran) or {@code async} (the sync is queued and the write returns at once). Any other
   * value throws {@link GuardUnavailableException} naming the setting and the fix; the sync then runs
   * in the default mode, and its outcome carries the message ({@code setting}).
   */
  static String syncMode(SparkSession spark) {
    String mode = spark == null ? "" : lower(conf(spark, SYNC_MODE));
    if (mode.isEmpty() || mode.equals("commit")) {
      return "commit";
    }
    if (mode.equals("async")) {
      return "async";
    }
    throw new GuardUnavailableException(
        SYNC_MODE + " is '" + conf(spark, SYNC_MODE) + "': set it to 'commit' (sync before the write returns,"
            + " the default) or 'async' (sync in the background, in order per table)");
  }

  /** The session's {@value #SYNC_PROCESSES} (default {@value #DEFAULT_SYNC_PROCESSES}), refused unless 1 to 64. */
  static int syncProcesses(SparkSession spark) {
    String text = spark == null ? "" : conf(spark, SYNC_PROCESSES);
    if (text.isEmpty()) {
      return DEFAULT_SYNC_PROCESSES;
    }
    try {
      int n = Integer.parseInt(text);
      if (n >= 1 && n <= 64) {
        return n;
      }
    } catch (NumberFormatException e) {
      // refused below
    }
    throw new GuardUnavailableException(
        SYNC_PROCESSES + " is '" + text + "': set it to a whole number from 1 to 64");
  }

  /** One single-thread queue per sync process: a table's queued syncs run in commit order. */
  private static java.util.concurrent.ExecutorService syncExecutor(String table, int processes) {
    int slot = Math.floorMod(table.hashCode(), Math.max(1, processes));
    synchronized (SYNC_QUEUES) {
      return SYNC_QUEUES.computeIfAbsent(slot, s -> java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "icecompat-iceberg-sync-" + s);
        t.setDaemon(true);
        return t;
      }));
    }
  }

  /** Whether two table roots name the same table ({@code file:/x}, {@code file:///x} and {@code /x} do). */
  static boolean sameTable(String a, String b) {
    java.net.URI x = new Path(a).toUri().normalize();
    java.net.URI y = new Path(b).toUri().normalize();
    boolean localX = x.getScheme() == null || "file".equals(x.getScheme());
    boolean localY = y.getScheme() == null || "file".equals(y.getScheme());
    if (localX && localY) {
      return stripSlash(x.getPath()).equals(stripSlash(y.getPath()));
    }
    return x.toString().replaceAll("/+$", "").equals(y.toString().replaceAll("/+$", ""));
  }

  private static String stripSlash(String p) {
    return p.length() > 1 && p.endsWith("/") ? p.substring(0, p.length() - 1) : p;
  }

  private static void pending(String table, long version, int delta) {
    synchronized (PENDING) {
      java.util.TreeSet<Long> versions = PENDING.computeIfAbsent(table, t -> new java.util.TreeSet<>());
      if (delta > 0) {
        versions.add(version);
      } else {
        versions.remove(version);
        if (versions.isEmpty()) {
          PENDING.remove(table);
        }
      }
      PENDING.notifyAll();
    }
  }

  /**
   * The queued syncs that have not finished ({@code async} mode), as a JSON array of {@code {"table",
   * "versions"}}, the versions oldest first.
   */
  public static String pendingSyncs() throws IOException {
    ArrayNode out = JSON.createArrayNode();
    synchronized (PENDING) {
      PENDING.forEach((table, versions) -> {
        ObjectNode entry = out.addObject();
        entry.put("table", table);
        ArrayNode list = entry.putArray("versions");
        versions.forEach(list::add);
      });
    }
    return JSON.writeValueAsString(out);
  }

  /**
   * Waits until no queued sync of {@code table} (a table root as the syncs name it; every table when
   * empty) is left, at most {@code timeoutMillis}; whether none is left.
   */
  public static boolean awaitSyncs(String table, long timeoutMillis) throws InterruptedException {
    long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
    synchronized (PENDING) {
      while (table.isEmpty() ? !PENDING.isEmpty() : PENDING.keySet().stream().anyMatch(t -> sameTable(t, table))) {
        long left = (deadline - System.nanoTime()) / 1_000_000L;
        if (left <= 0) {
          return false;
        }
        PENDING.wait(left);
      }
      return true;
    }
  }

  /**
   * The outcomes of the last guarded Iceberg syncs in this driver, oldest first, as a JSON array of
   * {@code {"table", "version", "identifier"?, "converted_version", "millis", "error"?}} ({@code
   * identifier}: the table's Spark catalog name the sync was given; {@code millis}: the
   * sync's wall time, which the write call waited for); with {@code drain} they are removed.
   */
  public static String icebergSyncs(boolean drain) throws IOException {
    ArrayNode out = JSON.createArrayNode();
    synchronized (SYNCS) {
      SYNCS.forEach(out::add);
      if (drain) {
        SYNCS.clear();
      }
    }
    return JSON.writeValueAsString(out);
  }

  /**
   * Removes a log directory that holds nothing but Delta's empty {@code _staged_commits} directory
   * (delta-spark makes both before the first commit), and then nothing.
   */
  private static void deleteEmptyLog(FileSystem fs, Path logDir) throws IOException {
    if (!fs.exists(logDir)) {
      return;
    }
    Path staged = new Path(logDir, "_staged_commits");
    if (fs.exists(staged) && fs.getFileStatus(staged).isDirectory() && fs.listStatus(staged).length == 0) {
      fs.delete(staged, false);
    }
    if (fs.listStatus(logDir).length == 0) {
      fs.delete(logDir, false);
    }
  }

  /** The writer profile of the table this commit leaves: its own protocol/metadata, else the table's. */
  private static String writerProfileOf(SparkSession spark, Path root, List<String> actions) throws IOException {
    JsonNode protocol = null;
    JsonNode metadata = null;
    for (String line : actions) {
      if (line.contains("\"protocol\"") || line.contains("\"metaData\"")) {
        JsonNode a = JSON.readTree(line);
        protocol = a.has("protocol") ? a.get("protocol") : protocol;
        metadata = a.has("metaData") ? a.get("metaData") : metadata;
      }
    }
    String found = WriterProfile.of(protocol, metadata);
    if (found != null || (protocol != null && metadata != null)) {
      return found;
    }
    org.apache.spark.sql.delta.Snapshot snapshot = DeltaLog.forTable(spark, root).unsafeVolatileSnapshot();
    if (snapshot.version() < 0) {
      return null;
    }
    return WriterProfile.of(
        protocol != null ? protocol : JSON.readTree(snapshot.protocol().json()).get("protocol"),
        metadata != null ? metadata : JSON.readTree(snapshot.metadata().json()).get("metaData"));
  }

  private static void refuseIfViolated(JsonNode res) throws IOException {
    if (!res.path(ServiceAnswers.OK).asBoolean(false)) {
      throw new GuardViolationException(
          res.path(ServiceAnswers.REPORT).asText("the write violates its profile"),
          JSON.writeValueAsString(res.path(ServiceAnswers.VIOLATIONS)));
    }
  }

  /** Whether {@code name} is a commit file name ({@code <20 digits>.json}). */
  static boolean isCommitFile(String name) {
    return name.length() == 25 && name.endsWith(".json") && name.substring(0, 20).chars().allMatch(Character::isDigit);
  }

  static String lower(String s) {
    return s.toLowerCase(Locale.ROOT);
  }
}
