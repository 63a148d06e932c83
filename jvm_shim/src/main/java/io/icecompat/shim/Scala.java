package io.icecompat.shim;

import java.util.List;
import java.util.Map;

/** Java-to-Scala collection conversions for calling delta-spark's Scala API from Java. */
final class Scala {
  private Scala() {}

  static <T> scala.collection.immutable.Seq<T> seq(List<T> list) {
    return scala.jdk.javaapi.CollectionConverters.asScala(list).toList();
  }

  static <K, V> scala.collection.immutable.Map<K, V> map(Map<K, V> map) {
    return scala.collection.immutable.Map$.MODULE$.from(scala.jdk.javaapi.CollectionConverters.asScala(map));
  }
}
