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
 * jar) before it is returned. A second rewrite ({@link MetadataHook}) gives the session guard its
 * view of every metadata update. Nothing else in Delta is touched.
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

  private FeatureRegistryAgent() {}

  public static void premain(String args, Instrumentation inst) {
    System.setProperty(STATUS_PROPERTY, "loaded");
    System.setProperty(GUARD_STATUS_PROPERTY, "loaded");
    inst.addTransformer(new Transformer(), false);
    inst.addTransformer(new MetadataHook(), false);
  }

  static final class Transformer implements ClassFileTransformer {
    @Override
    public byte[] transform(
        ClassLoader loader, String className, Class<?> redefined, ProtectionDomain pd, byte[] bytes) {
      if (!TARGET.equals(className)) {
        return null;
      }
      try {
        ClassReader reader = new ClassReader(bytes);
        ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
        int[] sites = {0};
        reader.accept(
            new ClassVisitor(Opcodes.ASM9, writer) {
              @Override
              public MethodVisitor visitMethod(
                  int access, String name, String desc, String sig, String[] exceptions) {
                MethodVisitor mv = super.visitMethod(access, name, desc, sig, exceptions);
                if (!METHOD.equals(name) || !DESC.equals(desc)) {
                  return mv;
                }
                return new MethodVisitor(Opcodes.ASM9, mv) {
                  @Override
                  public void visitInsn(int opcode) {
                    if (opcode == Opcodes.ARETURN) {
                      super.visitMethodInsn(Opcodes.INVOKESTATIC, HOOK_OWNER, HOOK_NAME, HOOK_DESC, false);
                      sites[0]++;
                    }
                    super.visitInsn(opcode);
                  }
                };
              }
            },
            0);
        if (sites[0] == 0) {
          System.setProperty(STATUS_PROPERTY, "failed:" + METHOD + DESC + " not found in " + className);
          return null;
        }
        System.setProperty(STATUS_PROPERTY, "patched:" + sites[0]);
        return writer.toByteArray();
      } catch (RuntimeException e) {
        System.setProperty(STATUS_PROPERTY, "failed:" + e);
        return null;
      }
    }
  }

  /**
   * Rewrites {@code DeltaColumnMappingBase.verifyAndUpdateMetadataChange} (the one method every
   * Delta metadata update passes through before any data file is written) to begin with {@code
   * newMetadata = Guard.beforeColumnMapping(spark, deltaLog, oldProtocol, oldMetadata, newMetadata,
   * isCreatingNewTable, isOverwriteSchema)}. The guard returns its argument unchanged for sessions
   * that are not guarded.
   */
  static final class MetadataHook implements ClassFileTransformer {
    @Override
    public byte[] transform(
        ClassLoader loader, String className, Class<?> redefined, ProtectionDomain pd, byte[] bytes) {
      if (!MAPPING_TARGET.equals(className)) {
        return null;
      }
      try {
        ClassReader reader = new ClassReader(bytes);
        ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
        int[] sites = {0};
        reader.accept(
            new ClassVisitor(Opcodes.ASM9, writer) {
              @Override
              public MethodVisitor visitMethod(
                  int access, String name, String desc, String sig, String[] exceptions) {
                MethodVisitor mv = super.visitMethod(access, name, desc, sig, exceptions);
                // the instance (default) method holds the body; locals: this, then the 7 arguments
                if (!MAPPING_METHOD.equals(name) || !MAPPING_DESC.equals(desc)
                    || (access & Opcodes.ACC_STATIC) != 0) {
                  return mv;
                }
                return new MethodVisitor(Opcodes.ASM9, mv) {
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
                };
              }
            },
            0);
        if (sites[0] != 1) {
          System.setProperty(
              GUARD_STATUS_PROPERTY, "failed:" + MAPPING_METHOD + MAPPING_DESC + " not found in " + className);
          return null;
        }
        System.setProperty(GUARD_STATUS_PROPERTY, "patched");
        return writer.toByteArray();
      } catch (RuntimeException e) {
        System.setProperty(GUARD_STATUS_PROPERTY, "failed:" + e);
        return null;
      }
    }
  }
}
