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
 * jar) before it is returned. Nothing else in Delta is touched.
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

  private FeatureRegistryAgent() {}

  public static void premain(String args, Instrumentation inst) {
    System.setProperty(STATUS_PROPERTY, "loaded");
    inst.addTransformer(new Transformer(), false);
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
}
