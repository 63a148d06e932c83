package io.icecompat.shim;

import org.apache.spark.sql.delta.RowId;
import org.apache.spark.sql.delta.Snapshot;
import org.apache.spark.sql.delta.VersionChecksum;
import org.apache.spark.sql.delta.actions.DomainMetadata;
import scala.Option;
import scala.collection.immutable.Seq;

/**
 * The row ID high-water mark of a snapshot, read from the snapshot's checksum when it can be.
 *
 * <p>Every commit to a table that supports row tracking asks its read snapshot for the {@code
 * delta.rowTracking} domain; delta-spark answers with {@code snapshot.domainMetadata}, which is
 * {@code computedState.domainMetadata}: a state reconstruction of the snapshot (a Spark job over the
 * table's checkpoint and commits, in {@code spark.databricks.delta.snapshotPartitions} tasks). Each
 * commit reads a new snapshot, so each commit pays it, even though the snapshot's checksum file
 * ({@code <version>.crc}) usually carries the same domains: Delta writes them into the checksum
 * incrementally, all of the table's live domains or none (none above {@code
 * spark.databricks.delta.maxDomainMetadatasInCrc}), and itself builds the next checksum from them.
 * The driver agent routes {@code RowId.extractHighWatermark}'s lookup here; a snapshot without a
 * checksum, or whose checksum holds no domain list, is answered by Delta's own path.
 */
public final class HighWatermark {
  private HighWatermark() {}

  /**
   * {@code domain.fromSnapshot(snapshot)}, from the checksum's domain list when the snapshot has a
   * checksum that holds one (a domain absent from that list is absent from the table).
   */
  public static Option<RowId.RowTrackingMetadataDomain> fromSnapshot(
      RowId.RowTrackingMetadataDomain$ domain, Snapshot snapshot) {
    Option<Seq<DomainMetadata>> listed = checksumDomains(snapshot);
    if (listed.isEmpty()) {
      return domain.fromSnapshot(snapshot);
    }
    scala.collection.Iterator<DomainMetadata> it = listed.get().iterator();
    while (it.hasNext()) {
      DomainMetadata d = it.next();
      if (!d.removed() && domain.isSameDomain(d)) {
        return domain.unapply(d);
      }
    }
    return Option.empty();
  }

  /** The live domains the snapshot's checksum lists, if it has a checksum of its own version with a list. */
  static Option<Seq<DomainMetadata>> checksumDomains(Snapshot snapshot) {
    Option<VersionChecksum> crc = snapshot.checksumOpt();
    if (crc.isEmpty()) {
      return Option.empty();
    }
    return crc.get().domainMetadata();
  }

  /** The high-water mark as the checksum gives it: -1 when absent from it, null when the checksum cannot answer. */
  public static Long fromChecksum(Snapshot snapshot) {
    if (checksumDomains(snapshot).isEmpty()) {
      return null;
    }
    Option<RowId.RowTrackingMetadataDomain> d = fromSnapshot(RowId.RowTrackingMetadataDomain$.MODULE$, snapshot);
    return d.isEmpty() ? -1L : d.get().rowIdHighWaterMark();
  }

  /** The high-water mark as Delta's own path gives it (a state reconstruction): -1 when absent. */
  public static long fromState(Snapshot snapshot) {
    Option<RowId.RowTrackingMetadataDomain> d = RowId.RowTrackingMetadataDomain$.MODULE$.fromSnapshot(snapshot);
    return d.isEmpty() ? -1L : d.get().rowIdHighWaterMark();
  }
}
