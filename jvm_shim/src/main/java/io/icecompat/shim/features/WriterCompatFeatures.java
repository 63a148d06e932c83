package io.icecompat.shim.features;

import java.util.List;
import java.util.Locale;
import org.apache.spark.sql.delta.DeltaConfigs$;
import org.apache.spark.sql.delta.TableFeature;
import org.apache.spark.sql.delta.TableFeature$;
import scala.Tuple2;

/**
 * The writer-compat features and their table properties, made known to delta-spark.
 *
 * <p>Two halves, both needed: the features (through the agent's hook, {@link #extend}) and the
 * {@code delta.enableIcebergWriterCompat*} properties (Delta rejects unknown {@code delta.*} keys).
 * The properties are registered only once the features are known: a session that accepted the
 * property without knowing the feature would commit metadata that enables a feature its protocol
 * lacks, a table every later operation refuses.
 */
public final class WriterCompatFeatures {
  private static final List<WriterCompatFeature> FEATURES =
      List.of(IcebergWriterCompatV1Feature.INSTANCE, IcebergWriterCompatV3Feature.INSTANCE);
  private static final String AGENT_STATUS = "icecompat.agent.status";
  private static volatile boolean configsRegistered;

  private WriterCompatFeatures() {}

  /**
   * Called, through the agent's rewrite, on every return of {@code
   * TableFeature$.allSupportedFeaturesMap()}: adds our features under Delta's lower-cased keys. A
   * Delta version that knows a feature itself keeps its own definition.
   */
  public static scala.collection.immutable.Map<String, TableFeature> extend(
      scala.collection.immutable.Map<String, TableFeature> base) {
    scala.collection.immutable.Map<String, TableFeature> out = base;
    for (WriterCompatFeature f : FEATURES) {
      String key = f.name().toLowerCase(Locale.ROOT);
      if (!out.contains(key)) {
        out = out.$plus(new Tuple2<>(key, (TableFeature) f));
      }
    }
    return out;
  }

  /** Whether delta-spark resolves every writer-compat feature by name (the agent's hook is live). */
  public static boolean featuresKnown() {
    for (WriterCompatFeature f : FEATURES) {
      if (!TableFeature$.MODULE$.featureNameToFeature(f.name()).isDefined()) {
        return false;
      }
    }
    return true;
  }

  /** What the agent recorded ("loaded", "patched:N", "failed:..."), or "absent". */
  public static String agentStatus() {
    return System.getProperty(AGENT_STATUS, "absent");
  }

  /**
   * Makes the writer-compat features usable in this JVM, or throws {@link IllegalStateException}
   * saying why not. Idempotent.
   */
  public static synchronized void activate() {
    if (!featuresKnown()) {
      throw new IllegalStateException(
          "delta-spark does not know the table features icebergWriterCompatV1/V3 in this JVM (icecompat "
              + "agent status: "
              + agentStatus()
              + "). Start the driver with -javaagent:<icecompat_writer/jars>/icecompat-agent.jar in "
              + "spark.driver.extraJavaOptions (icecompat_writer.session() and conf/spark-defaults.conf do)");
    }
    if (configsRegistered) {
      return;
    }
    DeltaConfigs$ configs = DeltaConfigs$.MODULE$;
    for (WriterCompatFeature f : FEATURES) {
      String key = f.property().substring("delta.".length());
      if (configs.entries().get(key.toLowerCase(Locale.ROOT)) != null) {
        continue;
      }
      scala.Function1<String, Object> fromString = s -> Boolean.valueOf(s.trim().toLowerCase(Locale.ROOT));
      scala.Function1<Object, Object> valid = v -> Boolean.TRUE;
      @SuppressWarnings({"unchecked", "rawtypes"})
      scala.collection.immutable.Seq<org.apache.spark.sql.delta.DeltaConfig<Object>> noAlternates =
          (scala.collection.immutable.Seq) configs.buildConfig$default$7();
      configs.<Object>buildConfig(
          key, "false", fromString, valid, "needs to be a boolean.", configs.buildConfig$default$6(), noAlternates);
    }
    configsRegistered = true;
  }
}
