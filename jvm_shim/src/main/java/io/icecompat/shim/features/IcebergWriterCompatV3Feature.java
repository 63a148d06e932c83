package io.icecompat.shim.features;

import org.apache.spark.sql.delta.IcebergCompatV3TableFeature$;

/** {@code icebergWriterCompatV3}: requires columnMapping and icebergCompatV3. */
public final class IcebergWriterCompatV3Feature extends WriterCompatFeature {
  public static final IcebergWriterCompatV3Feature INSTANCE = new IcebergWriterCompatV3Feature();

  private IcebergWriterCompatV3Feature() {
    super("icebergWriterCompatV3", "delta.enableIcebergWriterCompatV3", IcebergCompatV3TableFeature$.MODULE$);
  }

  private Object readResolve() {
    return INSTANCE;
  }
}
