package io.icecompat.shim.agent;

import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import org.apache.xbean.asm9.ClassReader;
import org.apache.xbean.asm9.ClassVisitor;
import org.apache.xbean.asm9.ClassWriter;
import org.apache.xbean.asm9.MethodVisitor;
import org.apache.xbean.asm9.Opcodes;

/**
 * The driver-side Java agent that teaches delta-spark the writer-compat table features.
 *
 * <p>delta-spark 4.4 has no registry of table features that can be extended: {@code
 * TableFeature$.allSupportedFeaturesMap()} rebuilds a hard-coded set on every call and every
 * by-name lookup and the write-time protocol check go through it. This agent rewrites that one
 * method so that its result passes through {@code WriterCompatFeatures.extend(Map)} (in the shim
 * jar) before it is returned. A second rewrite ({@link #metadataHook}) gives the session guard its
 * view of every metadata update, and a third ({@link #icebergStep}) lets the guard's own Iceberg
 * sync stand in for Delta's pre-commit Iceberg conversion when delta-iceberg is absent. A fourth
 * ({@link #rowTrackingWatermark}) lets a commit to a row-tracking table read the row ID high-water
 * mark from the read snapshot's checksum instead of rebuilding the snapshot's whole state. Nothing
 * else in Delta is touched.
 *
 * <p>The agent jar holds only this class: it is on the system class path, which cannot see Delta;
 * the injected call is resolved by the class loader that loaded delta-spark (the one of {@code
 * spark.jars}). It patches only when the method has exactly the expected signature, and records
 * the outcome in the system property {@value #STATUS_PROPERTY} so the shim can refuse loudly when
 * the patch is absent. It depends on nothing but the ASM copy Spark ships.
 */
public final class FeatureRegistryAgent {
  /** System property recording what the agent did: "loaded", then "patched:N" or "failed:...". */
  public static final String STATUS_PROPERTY = "icecompat.agent.status";

  static final String TARGET = "org/apache/spark/sql/delta/TableFeature$";
  static final String METHOD = "allSupportedFeaturesMap";
  static final String DESC = "()Lscala/collection/immutable/Map;";
  static final String HOOK_OWNER = "io/icecompat/shim/features/WriterCompatFeatures";
  static final String HOOK_NAME = "extend";
  static final String HOOK_DESC = "(Lscala/collection/immutable/Map;)Lscala/collection/immutable/Map;";

  /** System property recording the metadata hook: "patched" or "failed:...". */
  public static final String GUARD_STATUS_PROPERTY = "icecompat.agent.guard";

  static final String MAPPING_TARGET = "org/apache/spark/sql/delta/DeltaColumnMappingBase";
  static final String MAPPING_METHOD = "verifyAndUpdateMetadataChange";
  static final String METADATA = "Lorg/apache/spark/sql/delta/actions/Metadata;";
  static final String MAPPING_DESC =
      "(Lorg/apache/spark/sql/SparkSession;Lorg/apache/spark/sql/delta/DeltaLog;"
          + "Lorg/apache/spark/sql/delta/actions/Protocol;" + METADATA + METADATA + "ZZ)" + METADATA;
  static final String GUARD_OWNER = "io/icecompat/shim/guard/Guard";
  static final String GUARD_NAME = "beforeColumnMapping";

  /** System property recording the pre-commit Iceberg hook: "patched" or "failed:...". */
  public static final String ICEBERG_STATUS_PROPERTY = "icecompat.agent.iceberg";

  static final String TXN_TARGET = "org/apache/spark/sql/delta/OptimisticTransactionImpl";
  static final String ICEBERG_STEP = "generateIcebergAndUpdateCurrentTransactionInfo";
  static final String ICEBERG_STEP_DESC =
      "(Lorg/apache/spark/sql/SparkSession;Lorg/apache/spark/sql/delta/util/TransactionHelper;J"
          + "Lorg/apache/spark/sql/delta/CurrentTransactionInfo;"
          + "Lorg/apache/spark/sql/catalyst/catalog/CatalogTable;)Lscala/Tuple2;";
  static final String UNIFORM = "org/apache/spark/sql/delta/UniversalFormat$";
  static final String ICEBERG_ENABLED = "icebergEnabled";
  static final String ICEBERG_ENABLED_DESC = "(" + METADATA + ")Z";
  static final String STEP_HOOK_NAME = "beforeIcebergStep";
  static final String STEP_HOOK_DESC =
      "(Lorg/apache/spark/sql/delta/util/TransactionHelper;J"
          + "Lorg/apache/spark/sql/catalyst/catalog/CatalogTable;)V";
  static final String CONVERTS_NAME = "deltaConvertsIceberg";
  static final String CONVERTS_DESC = "(L" + UNIFORM + ";" + METADATA + ")Z";

  /** System property recording the row-tracking high-water-mark hook: "patched" or "failed:...". */
  public static final String ROW_TRACKING_STATUS_PROPERTY = "icecompat.agent.rowtracking";

  static final String ROWID_TARGET = "org/apache/spark/sql/delta/RowId$";
  static final String WATERMARK = "extractHighWatermark";
  static final String SNAPSHOT = "Lorg/apache/spark/sql/delta/Snapshot;";
  static final String WATERMARK_DESC = "(" + SNAPSHOT + ")Lscala/Option;";
  static final String DOMAIN_UTILS = "org/apache/spark/sql/delta/RowId$RowTrackingMetadataDomain$";
  static final String FROM_SNAPSHOT = "fromSnapshot";
  static final String FROM_SNAPSHOT_DESC = "(" + SNAPSHOT + ")Lscala/Option;";
  static final String WATERMARK_OWNER = "io/icecompat/shim/HighWatermark";
  static final String WATERMARK_HOOK_DESC = "(L" + DOMAIN_UTILS + ";" + SNAPSHOT + ")Lscala/Option;";

  private FeatureRegistryAgent() {}

  public static void premain(String args, Instrumentation inst) {
    System.setProperty(STATUS_PROPERTY, "loaded");
    System.setProperty(GUARD_STATUS_PROPERTY, "loaded");
    System.setProperty(ICEBERG_STATUS_PROPERTY, "loaded");
    System.setProperty(ROW_TRACKING_STATUS_PROPERTY, "loaded");
    inst.addTransformer(featureRegistry(), false);
    inst.addTransformer(metadataHook(), false);
    inst.addTransformer(icebergStep(), false);
    inst.addTransformer(rowTrackingWatermark(), false);
  }

  /**
   * A transformer that rewrites one method of one class: {@code body} wraps the visitor of the method
   * named {@code method} with descriptor {@code desc} (instance methods only when {@code
   * instanceOnly}: a trait's default method holds the body, its static twin only forwards) and counts
   * its edits in {@code sites}; {@code verdict} turns the counts into the status recorded in {@code
   * property} ("patched..." keeps the rewrite, anything else drops it: the class loads unchanged).
   */
  record MethodRewrite(
      String target,
      String method,
      String desc,
      boolean instanceOnly,
      String property,
      java.util.function.BiFunction<MethodVisitor, int[], MethodVisitor> body,
      java.util.function.Function<int[], String> verdict)
      implements ClassFileTransformer {
    @Override
    public byte[] transform(
        ClassLoader loader, String className, Class<?> redefined, ProtectionDomain pd, byte[] bytes) {
      if (!target.equals(className)) {
        return null;
      }
      try {
        ClassReader reader = new ClassReader(bytes);
        ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
        int[] sites = new int[2];
        reader.accept(
            new ClassVisitor(Opcodes.ASM9, writer) {
              @Override
              public MethodVisitor visitMethod(
                  int access, String name, String d, String sig, String[] exceptions) {
                MethodVisitor mv = super.visitMethod(access, name, d, sig, exceptions);
                boolean wanted = method.equals(name) && desc.equals(d)
                    && !(instanceOnly && (access & Opcodes.ACC_STATIC) != 0);
                return wanted ? body.apply(mv, sites) : mv;
              }
            },
            0);
        String status = verdict.apply(sites);
        System.setProperty(property, status);
        return status.startsWith("patched") ? writer.toByteArray() : null;
      } catch (RuntimeException e) {
        System.setProperty(property, "failed:" + e);
        return null;
      }
    }
  }

  /** Every {@code return} of {@code allSupportedFeaturesMap} passes its map through the hook first. */
  static MethodRewrite featureRegistry() {
    return new MethodRewrite(TARGET, METHOD, DESC, false, STATUS_PROPERTY,
        (mv, sites) -> new MethodVisitor(Opcodes.ASM9, mv) {
          @Override
          public void visitInsn(int opcode) {
            if (opcode == Opcodes.ARETURN) {
              super.visitMethodInsn(Opcodes.INVOKESTATIC, HOOK_OWNER, HOOK_NAME, HOOK_DESC, false);
              sites[0]++;
            }
            super.visitInsn(opcode);
          }
        },
        sites -> sites[0] > 0 ? "patched:" + sites[0] : "failed:" + METHOD + DESC + " not found in " + TARGET);
  }

  /**
   * {@code DeltaColumnMappingBase.verifyAndUpdateMetadataChange} (the one method every Delta metadata
   * update passes through before any data file is written) begins with {@code newMetadata =
   * Guard.beforeColumnMapping(spark, deltaLog, oldProtocol, oldMetadata, newMetadata,
   * isCreatingNewTable, isOverwriteSchema)}. The guard returns its argument unchanged for sessions
   * that are not guarded. Locals of the default method: this, then the 7 arguments.
   */
  static MethodRewrite metadataHook() {
    return new MethodRewrite(MAPPING_TARGET, MAPPING_METHOD, MAPPING_DESC, true, GUARD_STATUS_PROPERTY,
        (mv, sites) -> new MethodVisitor(Opcodes.ASM9, mv) {
          @Override
          public void visitCode() {
            super.visitCode();
            for (int i = 1; i <= 5; i++) {
              super.visitVarInsn(Opcodes.ALOAD, i);
            }
            super.visitVarInsn(Opcodes.ILOAD, 6);
            super.visitVarInsn(Opcodes.ILOAD, 7);
            super.visitMethodInsn(Opcodes.INVOKESTATIC, GUARD_OWNER, GUARD_NAME, MAPPING_DESC, false);
            super.visitVarInsn(Opcodes.ASTORE, 5);
            sites[0]++;
          }
        },
        sites -> sites[0] == 1
            ? "patched" : "failed:" + MAPPING_METHOD + MAPPING_DESC + " not found in " + MAPPING_TARGET);
  }

  /**
   * Delta's pre-commit Iceberg step, {@code
   * OptimisticTransactionImpl.generateIcebergAndUpdateCurrentTransactionInfo(spark, txn, version,
   * txnInfo, catalogTable)}, which Delta runs for every commit of a transaction opened for a Spark
   * catalog table: it begins with {@code Guard.beforeIcebergStep(txn, version, catalogTable)} (the
   * table's catalog name, for the sync after the commit), and its test {@code
   * UniversalFormat.icebergEnabled(metadata)} becomes {@code Guard.deltaConvertsIceberg(
   * UniversalFormat, metadata)}, which answers Delta's own test unless Delta's converter is absent and
   * the guard syncs the table itself. Both are straight-line edits (no branch is added, so the
   * method's stack map frames stay valid). Locals: this, spark, txn, version (two slots), txnInfo,
   * catalogTable.
   */
  static MethodRewrite icebergStep() {
    return new MethodRewrite(TXN_TARGET, ICEBERG_STEP, ICEBERG_STEP_DESC, true, ICEBERG_STATUS_PROPERTY,
        (mv, sites) -> new MethodVisitor(Opcodes.ASM9, mv) {
          @Override
          public void visitCode() {
            super.visitCode();
            super.visitVarInsn(Opcodes.ALOAD, 2);
            super.visitVarInsn(Opcodes.LLOAD, 3);
            super.visitVarInsn(Opcodes.ALOAD, 6);
            super.visitMethodInsn(Opcodes.INVOKESTATIC, GUARD_OWNER, STEP_HOOK_NAME, STEP_HOOK_DESC, false);
            sites[0]++;
          }

          @Override
          public void visitMethodInsn(int opcode, String owner, String name, String desc, boolean itf) {
            if (opcode == Opcodes.INVOKEVIRTUAL && UNIFORM.equals(owner)
                && ICEBERG_ENABLED.equals(name) && ICEBERG_ENABLED_DESC.equals(desc)) {
              super.visitMethodInsn(Opcodes.INVOKESTATIC, GUARD_OWNER, CONVERTS_NAME, CONVERTS_DESC, false);
              sites[1]++;
              return;
            }
            super.visitMethodInsn(opcode, owner, name, desc, itf);
          }
        },
        sites -> sites[0] == 1 && sites[1] == 1 ? "patched" : "failed:" + ICEBERG_STEP + ICEBERG_STEP_DESC
            + " with one " + ICEBERG_ENABLED + " test not found in " + TXN_TARGET);
  }

  /**
   * {@code RowId.extractHighWatermark(snapshot)}, which every commit to a table that supports row
   * tracking calls on its read snapshot, reads the {@code delta.rowTracking} domain with {@code
   * RowTrackingMetadataDomain.fromSnapshot(snapshot)}: {@code snapshot.domainMetadata}, a full state
   * reconstruction (a Spark job over the whole log) of a snapshot that is new after every commit. The
   * call becomes {@code HighWatermark.fromSnapshot(RowTrackingMetadataDomain, snapshot)}, which
   * answers from the snapshot's own checksum when that holds the table's domain metadata and asks
   * Delta's {@code fromSnapshot} otherwise. A straight-line edit: one call replaced by another that
   * takes the same stack (the module, the snapshot) and leaves the same type.
   */
  static MethodRewrite rowTrackingWatermark() {
    return new MethodRewrite(ROWID_TARGET, WATERMARK, WATERMARK_DESC, true, ROW_TRACKING_STATUS_PROPERTY,
        (mv, sites) -> new MethodVisitor(Opcodes.ASM9, mv) {
          @Override
          public void visitMethodInsn(int opcode, String owner, String name, String desc, boolean itf) {
            if (opcode == Opcodes.INVOKEVIRTUAL && DOMAIN_UTILS.equals(owner)
                && FROM_SNAPSHOT.equals(name) && FROM_SNAPSHOT_DESC.equals(desc)) {
              super.visitMethodInsn(Opcodes.INVOKESTATIC, WATERMARK_OWNER, FROM_SNAPSHOT, WATERMARK_HOOK_DESC, false);
              sites[0]++;
              return;
            }
            super.visitMethodInsn(opcode, owner, name, desc, itf);
          }
        },
        sites -> sites[0] == 1 ? "patched" : "failed:" + WATERMARK + WATERMARK_DESC + " with one "
            + FROM_SNAPSHOT + " call not found in " + ROWID_TARGET);
  }
}
