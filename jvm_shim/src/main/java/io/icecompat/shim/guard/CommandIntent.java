package io.icecompat.shim.guard;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.ResolvedIdentifier;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.SetTableProperties;
import org.apache.spark.sql.catalyst.plans.logical.V2CreateTablePlan;
import org.apache.spark.sql.connector.catalog.CatalogV2Util;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.delta.commands.AlterTableSetPropertiesDeltaCommand;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SQLExecution;
import scala.jdk.javaapi.CollectionConverters;

/**
 * What the command running on this thread is about to declare, for the commits it makes first.
 *
 * <p>{@code ALTER TABLE ... SET TBLPROPERTIES} with {@code delta.enableRowTracking} on a table with
 * files is several commits in delta-spark: the protocol upgrade, the row-id backfill, and only then
 * the metadata with the properties. The properties a commit check needs to judge the first of them
 * are in the command itself: the query execution Spark registered for this thread's SQL execution
 * holds the command's plan ({@link SetTableProperties} as parsed, {@link
 * AlterTableSetPropertiesDeltaCommand} once Delta resolved it).
 *
 * <p>The metadata update of such a command carries them too: delta-spark refuses some property changes
 * only when a SET TBLPROPERTIES commits them (enabling IcebergCompatV3 on a table with row tracking
 * enabled), and the rule service judges that before the commit, where delta-spark would throw.
 */
final class CommandIntent {
  private CommandIntent() {}

  /** Adds {@code command_properties} to {@code req} when this thread runs a SET TBLPROPERTIES. */
  static void attach(ObjectNode req, SparkSession spark) {
    Map<String, String> props = properties(spark);
    if (props != null && !props.isEmpty()) {
      ObjectNode out = req.putObject(ServiceMessages.COMMAND_PROPERTIES);
      props.forEach(out::put);
    }
  }

  private static Map<String, String> properties(SparkSession spark) {
    for (QueryExecution qe : running(spark)) {
      Map<String, String> found = find(qe.logical());
      if (found != null) {
        return found;
      }
    }
    return null;
  }

  /** The query executions Spark registered for this thread's SQL execution (root first). */
  private static List<QueryExecution> running(SparkSession spark) {
    List<QueryExecution> out = new ArrayList<>();
    for (String key : new String[] {"spark.sql.execution.root.id", SQLExecution.EXECUTION_ID_KEY()}) {
      String id = spark.sparkContext().getLocalProperty(key);
      if (id == null || id.isBlank()) {
        continue;
      }
      try {
        QueryExecution qe = SQLExecution.getQueryExecution(Long.parseLong(id.trim()));
        if (qe != null) {
          out.add(qe);
        }
      } catch (NumberFormatException e) {
        // not an execution id
      }
    }
    return out;
  }

  /**
   * The Spark catalog name ({@code db.tbl}) of the table the running command creates or replaces
   * ({@code CREATE [OR REPLACE] TABLE db.tbl}, CTAS, {@code saveAsTable}, {@code writeTo(...).create}),
   * when it is a table of the session catalog's databases; null otherwise (a path identifier such as
   * {@code delta.`/path`}, another catalog, no such command). Delta opens the transaction that
   * creates a table without the catalog table it is about to register, so the first commit learns
   * its name here.
   */
  static String createdTable(SparkSession spark) {
    for (QueryExecution qe : running(spark)) {
      Deque<LogicalPlan> todo = new ArrayDeque<>();
      todo.push(qe.analyzed());
      while (!todo.isEmpty()) {
        LogicalPlan plan = todo.pop();
        if (plan instanceof V2CreateTablePlan create && create.name() instanceof ResolvedIdentifier id) {
          Identifier ident = id.identifier();
          String[] ns = ident.namespace();
          boolean sessionTable = CatalogV2Util.isSessionCatalog(id.catalog()) && ns.length == 1
              && !ident.name().contains("/") && spark.sessionState().catalog().databaseExists(ns[0]);
          return sessionTable ? ns[0] + "." + ident.name() : null;
        }
        CollectionConverters.asJava(plan.children()).forEach(todo::push);
      }
    }
    return null;
  }

  private static Map<String, String> find(LogicalPlan root) {
    Deque<LogicalPlan> todo = new ArrayDeque<>();
    todo.push(root);
    while (!todo.isEmpty()) {
      LogicalPlan plan = todo.pop();
      if (plan instanceof SetTableProperties set) {
        return CollectionConverters.asJava(set.properties());
      }
      if (plan instanceof AlterTableSetPropertiesDeltaCommand cmd) {
        return CollectionConverters.asJava(cmd.configuration());
      }
      CollectionConverters.asJava(plan.children()).forEach(todo::push);
    }
    return null;
  }
}
