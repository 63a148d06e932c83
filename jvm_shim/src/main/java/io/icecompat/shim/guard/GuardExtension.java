package io.icecompat.shim.guard;

import io.icecompat.shim.features.WriterCompatFeatures;
import org.apache.spark.sql.SparkSessionExtensions;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * The session extension ({@code spark.sql.extensions}, after Delta's): turns the guard on for the
 * sessions it is applied to.
 *
 * <p>The checks themselves do not live in Spark's analyzer: a logical plan does not yet hold the
 * metadata Delta will commit (ids, physical names, protocol), so the guard acts inside Delta's
 * own transaction (see {@link Guard}). Loading the extension registers the writer-compat table
 * properties with Delta (so SQL can name them) and arms the guard: a session configured for the
 * guard without it refuses its guarded writes.
 */
public final class GuardExtension extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    Guard.markExtensionLoaded();
    try {
      // The writer-compat properties exist only once Delta knows the features (the agent's doing);
      // a guarded session must accept CREATE TABLE ... TBLPROPERTIES naming them.
      WriterCompatFeatures.activate();
    } catch (IllegalStateException e) {
      // no agent: the guard reports it (Guard.missing) on the first guarded write
    }
    return BoxedUnit.UNIT;
  }
}
