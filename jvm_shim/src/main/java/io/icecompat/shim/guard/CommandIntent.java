package io.icecompat.shim.guard;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.SetTableProperties;
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
    for (String key : new String[] {"spark.sql.execution.root.id", SQLExecution.EXECUTION_ID_KEY()}) {
      String id = spark.sparkContext().getLocalProperty(key);
      if (id == null || id.isBlank()) {
        continue;
      }
      QueryExecution qe;
      try {
        qe = SQLExecution.getQueryExecution(Long.parseLong(id.trim()));
      } catch (NumberFormatException e) {
        continue;
      }
      if (qe == null) {
        continue;
      }
      Map<String, String> found = find(qe.logical());
      if (found != null) {
        return found;
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
