package io.icecompat.shim.guard;

/**
 * The keys of the rule service's answers, with their JSON types, per operation: the Java counterpart
 * of the answer types in {@code icecompat_writer/jvm/protocol.py} ({@code ANSWERS}: {@code
 * HelloAnswer}, {@code PingAnswer}, {@code PlanMetadataAnswer}, {@code CheckCommitAnswer}, {@code
 * SyncAnswer}; any answer may be an {@code ErrorAnswer}). The JVM reads answers only by these names;
 * {@code tests/guard/test_protocol.py} reads the tables below from this file and compares them with
 * Python's answer types, both ways. JSON types: {@code boolean}, {@code integer}, {@code string},
 * {@code object}, {@code strings} (a list of strings), {@code objects} (a list of objects); {@code
 * |null} when the value may be null.
 */
final class ServiceAnswers {
  static final String OK = "ok";
  static final String ERROR = "error";
  static final String PROTOCOL = "protocol";
  static final String VERSION = "version";
  static final String PROFILE = "profile";
  static final String METADATA = "metadata";
  static final String CHANGES = "changes";
  static final String REPORT = "report";
  static final String VIOLATIONS = "violations";
  static final String DELETE = "delete";
  static final String SYNC = "sync";
  static final String CONVERTED_VERSION = "converted_version";
  static final String LAG = "lag";
  static final String METADATA_LOCATION = "metadata_location";
  static final String CATALOG = "catalog";
  static final String WARNING = "warning";

  /** Any operation's answer when its request failed (the JVM refuses the write, or logs the sync). */
  static final String[][] ERROR_ANSWER = {{ERROR, "string"}};

  static final String[][] HELLO_ANSWER = {{OK, "boolean"}, {PROTOCOL, "integer"}, {ERROR, "string"}};

  static final String[][] PING_ANSWER = {{OK, "boolean"}, {VERSION, "string"}, {PROTOCOL, "integer"}};

  static final String[][] PLAN_METADATA_ANSWER = {
    {OK, "boolean"},
    {PROFILE, "string|null"},
    {METADATA, "object|null"},
    {CHANGES, "strings"},
    {REPORT, "string"},
    {VIOLATIONS, "objects"},
    {DELETE, "strings"},
  };

  static final String[][] CHECK_COMMIT_ANSWER = {
    {OK, "boolean"},
    {PROFILE, "string|null"},
    {REPORT, "string"},
    {VIOLATIONS, "objects"},
    {DELETE, "strings"},
    {SYNC, "object"},
  };

  static final String[][] SYNC_ANSWER = {
    {OK, "boolean"},
    {PROFILE, "string|null"},
    {CONVERTED_VERSION, "integer|null"},
    {LAG, "integer|null"},
    {METADATA_LOCATION, "string|null"},
    {CATALOG, "string|null"},
    {WARNING, "string"},
  };

  private ServiceAnswers() {}
}
