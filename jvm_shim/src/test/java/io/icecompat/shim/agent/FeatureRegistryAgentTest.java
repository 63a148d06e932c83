package io.icecompat.shim.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import org.apache.xbean.asm9.ClassReader;
import org.apache.xbean.asm9.ClassVisitor;
import org.apache.xbean.asm9.MethodVisitor;
import org.apache.xbean.asm9.Opcodes;
import org.junit.jupiter.api.Test;

/**
 * The agent's rewrites applied to the real delta-spark classes (delta-spark is on the test class
 * path): each patches, the rewritten class passes the JVM's verifier (it is defined and linked in a
 * class loader of its own), and a class without the expected method is left unchanged with a
 * "failed" status.
 */
class FeatureRegistryAgentTest {
  private static byte[] classBytes(String internalName) throws IOException {
    try (InputStream in = FeatureRegistryAgentTest.class.getClassLoader()
        .getResourceAsStream(internalName + ".class")) {
      assertNotNull(in, internalName);
      return in.readAllBytes();
    }
  }

  /** The calls (owner.name) the method {@code name}{@code desc} of {@code bytes} makes, in order. */
  private static List<String> calls(byte[] bytes, String name, String desc) {
    List<String> out = new ArrayList<>();
    new ClassReader(bytes).accept(new ClassVisitor(Opcodes.ASM9) {
      @Override
      public MethodVisitor visitMethod(int access, String n, String d, String sig, String[] exceptions) {
        if (!name.equals(n) || !desc.equals(d) || (access & Opcodes.ACC_STATIC) != 0) {
          return null;
        }
        return new MethodVisitor(Opcodes.ASM9) {
          @Override
          public void visitMethodInsn(int opcode, String owner, String m, String md, boolean itf) {
            out.add(owner + "." + m);
          }
        };
      }
    }, 0);
    return out;
  }

  /** Defines {@code bytes} as {@code internalName} in a loader of its own and links it (verifies it). */
  private static void defineAndVerify(String internalName, byte[] bytes) throws ClassNotFoundException {
    String binary = internalName.replace('/', '.');
    ClassLoader parent = FeatureRegistryAgentTest.class.getClassLoader();
    ClassLoader own = new ClassLoader(parent) {
      @Override
      protected Class<?> loadClass(String n, boolean resolve) throws ClassNotFoundException {
        if (!n.equals(binary)) {
          return super.loadClass(n, resolve);
        }
        synchronized (getClassLoadingLock(n)) {
          Class<?> c = findLoadedClass(n);
          return c != null ? c : defineClass(n, bytes, 0, bytes.length);
        }
      }
    };
    Class<?> c = Class.forName(binary, false, own);
    assertEquals(own, c.getClassLoader());
    c.getDeclaredMethods(); // links the class: the verifier checks every rewritten method
  }

  @Test
  void deltasPreCommitIcebergStepAsksTheGuardAndStaysVerifiable() throws Exception {
    String target = FeatureRegistryAgent.TXN_TARGET;
    byte[] original = classBytes(target);
    byte[] rewritten = FeatureRegistryAgent.icebergStep().transform(null, target, null, null, original);
    assertNotNull(rewritten);
    assertEquals("patched", System.getProperty(FeatureRegistryAgent.ICEBERG_STATUS_PROPERTY));
    String step = FeatureRegistryAgent.ICEBERG_STEP;
    String desc = FeatureRegistryAgent.ICEBERG_STEP_DESC;
    String enabled = FeatureRegistryAgent.UNIFORM + "." + FeatureRegistryAgent.ICEBERG_ENABLED;
    assertTrue(calls(original, step, desc).contains(enabled));
    List<String> after = calls(rewritten, step, desc);
    String guard = FeatureRegistryAgent.GUARD_OWNER + ".";
    assertEquals(guard + FeatureRegistryAgent.STEP_HOOK_NAME, after.get(0));
    assertTrue(after.contains(guard + FeatureRegistryAgent.CONVERTS_NAME), after.toString());
    assertFalse(after.contains(enabled), after.toString());
    defineAndVerify(target, rewritten);
  }

  @Test
  void theRowIdHighWatermarkLookupGoesThroughTheChecksumHookAndStaysVerifiable() throws Exception {
    String target = FeatureRegistryAgent.ROWID_TARGET;
    byte[] original = classBytes(target);
    byte[] rewritten = FeatureRegistryAgent.rowTrackingWatermark().transform(null, target, null, null, original);
    assertNotNull(rewritten);
    assertEquals("patched", System.getProperty(FeatureRegistryAgent.ROW_TRACKING_STATUS_PROPERTY));
    String method = FeatureRegistryAgent.WATERMARK;
    String desc = FeatureRegistryAgent.WATERMARK_DESC;
    String delta = FeatureRegistryAgent.DOMAIN_UTILS + "." + FeatureRegistryAgent.FROM_SNAPSHOT;
    String hook = FeatureRegistryAgent.WATERMARK_OWNER + "." + FeatureRegistryAgent.FROM_SNAPSHOT;
    assertTrue(calls(original, method, desc).contains(delta));
    List<String> after = calls(rewritten, method, desc);
    assertTrue(after.contains(hook), after.toString());
    assertFalse(after.contains(delta), after.toString());
    defineAndVerify(target, rewritten);
  }

  @Test
  void theMetadataHookAndTheFeatureRegistryPatchTheirDeltaClasses() throws Exception {
    byte[] mapping = FeatureRegistryAgent.metadataHook().transform(
        null, FeatureRegistryAgent.MAPPING_TARGET, null, null, classBytes(FeatureRegistryAgent.MAPPING_TARGET));
    assertNotNull(mapping);
    assertEquals("patched", System.getProperty(FeatureRegistryAgent.GUARD_STATUS_PROPERTY));
    byte[] registry = FeatureRegistryAgent.featureRegistry().transform(
        null, FeatureRegistryAgent.TARGET, null, null, classBytes(FeatureRegistryAgent.TARGET));
    assertNotNull(registry);
    assertTrue(System.getProperty(FeatureRegistryAgent.STATUS_PROPERTY).startsWith("patched:"));
  }

  @Test
  void aClassWithoutTheStepIsLeftUnchangedAndTheFailureRecorded() throws Exception {
    // another class's bytes under the target's name: no such method, so nothing is rewritten
    byte[] other = classBytes("io/icecompat/shim/ShimInfo");
    assertNull(FeatureRegistryAgent.icebergStep().transform(null, FeatureRegistryAgent.TXN_TARGET, null, null, other));
    assertTrue(System.getProperty(FeatureRegistryAgent.ICEBERG_STATUS_PROPERTY).startsWith("failed:"));
    // and classes other than the target are never touched
    assertNull(FeatureRegistryAgent.icebergStep().transform(null, "io/icecompat/shim/ShimInfo", null, null, other));
  }
}
