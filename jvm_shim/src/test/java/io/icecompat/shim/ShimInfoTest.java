package io.icecompat.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ShimInfoTest {
  @Test
  void buildPropertiesAreFilteredWithThePinnedVersions() {
    assertEquals("4.4.0", ShimInfo.builtForDeltaVersion());
    assertEquals("4.2.0", ShimInfo.builtForSparkVersion());
  }

  @Test
  void runningDeltaIsReadFromTheDeltaJar() {
    // delta-spark is a compile-scope dependency, so the test classpath has the real jar.
    assertEquals("4.4.0", ShimInfo.runningDeltaVersion());
  }
}
