package io.icecompat.shim.features;

import java.util.Locale;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.delta.ColumnMappingTableFeature$;
import org.apache.spark.sql.delta.FeatureAutomaticallyEnabledByMetadata;
import org.apache.spark.sql.delta.TableFeature;
import org.apache.spark.sql.delta.WriterFeature;
import org.apache.spark.sql.delta.actions.Metadata;
import org.apache.spark.sql.delta.actions.Protocol;

/**
 * A writer-compat table feature delta-spark 4.4 does not ship: enabled by a {@code delta.enable...}
 * table property, requiring column mapping and one IcebergCompat version.
 *
 * <p>Scala's {@code sealed} on Delta's feature classes is a compile-time rule of the Scala compiler
 * only; for the JVM these are ordinary abstract classes, so a Java subclass is a real feature to
 * every Delta code path, including automatic enablement from table properties.
 */
public abstract class WriterCompatFeature extends WriterFeature
    implements FeatureAutomaticallyEnabledByMetadata {
  private final String property;
  private final TableFeature compatFeature;

  protected WriterCompatFeature(String name, String property, TableFeature compatFeature) {
    super(name);
    this.property = property;
    this.compatFeature = compatFeature;
  }

  /** The table property that enables the feature, e.g. {@code delta.enableIcebergWriterCompatV1}. */
  public final String property() {
    return property;
  }

  @Override
  public boolean metadataRequiresFeatureToBeEnabled(Protocol protocol, Metadata metadata, SparkSession spark) {
    return "true".equals(metadata.configuration().getOrElse(property, () -> "false").trim().toLowerCase(Locale.ROOT));
  }

  @Override
  public boolean automaticallyUpdateProtocolOfExistingTables() {
    return true;
  }

  @Override
  public scala.collection.immutable.Set<TableFeature> requiredFeatures() {
    return scala.collection.immutable.Set$.MODULE$.<TableFeature>empty()
        .$plus(ColumnMappingTableFeature$.MODULE$)
        .$plus(compatFeature);
  }
}
