package io.icecompat.shim.features;

import org.apache.spark.sql.delta.IcebergCompatV2TableFeature$;

/** {@code icebergWriterCompatV1}: requires columnMapping and icebergCompatV2. */
public final class IcebergWriterCompatV1Feature extends WriterCompatFeature {
  public static final IcebergWriterCompatV1Feature INSTANCE = new IcebergWriterCompatV1Feature();

  private IcebergWriterCompatV1Feature() {
    super("icebergWriterCompatV1", "delta.enableIcebergWriterCompatV1", IcebergCompatV2TableFeature$.MODULE$);
  }

  private Object readResolve() {
    return INSTANCE;
  }
}
