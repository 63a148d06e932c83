package io.icecompat.shim.guard;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * The requests the JVM sends to the rule service, built in one place: the Java counterpart of
 * {@code icecompat_writer/jvm/protocol.py}, with the same operations, keys and protocol version.
 * The service refuses a request with a key it does not define (naming the key), so a key added
 * here without its Python counterpart fails on the first request; change {@link #PROTOCOL_VERSION}
 * on both sides with any change of a message.
 */
public final class ServiceMessages {
  /** Must equal {@code icecompat_writer.jvm.protocol.PROTOCOL_VERSION}. */
  public static final int PROTOCOL_VERSION = 2;

  static final String OP = "op";
  static final String HELLO = "hello";
  static final String PING = "ping";
  static final String PLAN_METADATA = "plan_metadata";
  static final String CHECK_COMMIT = "check_commit";
  static final String SYNC = "sync";

  // keys every request may carry, added by StorageSettings, CommitFacts and CommandIntent
  static final String HADOOP = "hadoop";
  static final String STATE = "state";
  static final String FOOTERS = "footers";
  static final String COMMAND_PROPERTIES = "command_properties";

  private static final ObjectMapper JSON = new ObjectMapper();

  private ServiceMessages() {}

  /** The first request of every service process: this jar's protocol version. */
  static ObjectNode hello() {
    ObjectNode req = request(HELLO);
    req.put("protocol", PROTOCOL_VERSION);
    return req;
  }

  /** Is the service up? Answers {@code version} (the package's) and {@code protocol}. */
  static ObjectNode ping() {
    return request(PING);
  }

  /** Delta is about to update a table's metadata: protocol and metadata as the log holds them. */
  static ObjectNode planMetadata(
      String table,
      String profile,
      boolean creating,
      boolean overwriteSchema,
      boolean tableExists,
      JsonNode oldProtocol,
      JsonNode oldMetadata,
      JsonNode newMetadata) {
    ObjectNode req = request(PLAN_METADATA);
    req.put("table", table);
    req.put("profile", profile);
    req.put("creating", creating);
    req.put("overwrite_schema", overwriteSchema);
    req.put("table_exists", tableExists);
    req.set("old_protocol", oldProtocol);
    req.set("old_metadata", oldMetadata);
    req.set("new_metadata", newMetadata);
    return req;
  }

  /** A commit file is about to be written: its lines, as the log will hold them. */
  static ObjectNode checkCommit(String table, long version, String profile, boolean optedOut, List<String> actions) {
    ObjectNode req = request(CHECK_COMMIT);
    req.put("table", table);
    req.put("version", version);
    req.put("profile", profile);
    req.put("opted_out", optedOut);
    ArrayNode lines = req.putArray("actions");
    actions.forEach(lines::add);
    return req;
  }

  /**
   * The commit file of {@code version} exists: bring the Iceberg metadata up to it. {@code
   * identifier}: the table's Spark catalog name ({@code db.tbl}) when the commit was made through
   * it, else null (the key is then absent).
   */
  static ObjectNode sync(String table, long version, String catalog, JsonNode configuration, String identifier) {
    ObjectNode req = request(SYNC);
    req.put("table", table);
    req.put("version", version);
    req.put("catalog", catalog);
    req.set("configuration", configuration);
    if (identifier != null) {
      req.put("identifier", identifier);
    }
    return req;
  }

  /**
   * The service's answer to {@link #hello}, or a mismatch naming both versions: the service must
   * answer this jar's version (a service too old to know the handshake answers an unknown operation).
   */
  static void requireSameProtocol(JsonNode answer, String command) {
    JsonNode theirs = answer.path(ServiceAnswers.PROTOCOL);
    if (answer.path(ServiceAnswers.OK).asBoolean(false) && theirs.isInt() && theirs.asInt() == PROTOCOL_VERSION) {
      return;
    }
    String spoken = theirs.isInt() ? "protocol " + theirs.asInt() : "no protocol version (an older icecompat_writer)";
    throw new RuleServiceMismatchException(
        "the icecompat rule service (" + command + ") speaks " + spoken + " but this driver's icecompat"
            + " jar speaks protocol " + PROTOCOL_VERSION + ": install the same icecompat_writer build for"
            + " the driver's jars and for spark.icecompat.python"
            + (answer.has(ServiceAnswers.ERROR) ? " (the service said: " + answer.get(ServiceAnswers.ERROR).asText() + ")" : ""));
  }

  private static ObjectNode request(String op) {
    ObjectNode req = JSON.createObjectNode();
    req.put(OP, op);
    return req;
  }
}
