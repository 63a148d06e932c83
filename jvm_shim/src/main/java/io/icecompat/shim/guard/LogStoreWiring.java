package io.icecompat.shim.guard;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.delta.storage.LogStore;
import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import scala.Tuple2;

/**
 * Which Delta log store each URI scheme's commits go through, and which store the guard wraps there.
 *
 * <p>Delta picks a log store per scheme ({@code spark.delta.logStore.<scheme>.impl}, else its own
 * default: S3SingleDriverLogStore for s3/s3a/s3n, AzureLogStore for abfs/abfss/adl/wasb/wasbs,
 * GCSLogStore for gs, HDFSLogStore for everything else). The guard's commit check lives in {@link
 * GuardedLogStore}, so a scheme is guarded only when its key names that class (or a subclass); the
 * store that then really writes is the scheme's delegate ({@value #DELEGATE_PREFIX}{@code
 * <scheme>.delegate}, else Delta's default for the scheme). Everything here reads the static
 * SparkConf, the same settings Delta reads to pick its stores.
 */
public final class LogStoreWiring {
  public static final String DELEGATE_PREFIX = "spark.icecompat.guard.logStore.";
  public static final String DELEGATE_SUFFIX = ".delegate";
  static final String S3_STORE = "io.delta.storage.S3SingleDriverLogStore";
  static final String AZURE_STORE = "io.delta.storage.AzureLogStore";
  static final String GCS_STORE = "io.delta.storage.GCSLogStore";
  static final String HDFS_STORE = "io.delta.storage.HDFSLogStore";
  /** The schemes the guard is wired for by default: every scheme Delta itself names, plus file/hdfs. */
  public static final List<String> SCHEMES =
      List.of("file", "hdfs", "s3", "s3a", "s3n", "abfs", "abfss", "adl", "wasb", "wasbs", "gs");

  private static final ObjectMapper JSON = new ObjectMapper();

  private LogStoreWiring() {}

  /** Delta's own log store for {@code scheme} (what Delta uses when nothing is configured). */
  public static String deltaDefault(String scheme) {
    switch (scheme.toLowerCase(Locale.ROOT)) {
      case "s3": case "s3a": case "s3n":
        return S3_STORE;
      case "abfs": case "abfss": case "adl": case "wasb": case "wasbs":
        return AZURE_STORE;
      case "gs":
        return GCS_STORE;
      default:
        return HDFS_STORE;
    }
  }

  static String delegateKey(String scheme) {
    return DELEGATE_PREFIX + scheme + DELEGATE_SUFFIX;
  }

  /** The static SparkConf of this JVM's Spark, or null outside Spark. */
  static SparkConf sparkConf() {
    SparkEnv env = SparkEnv.get();
    return env == null ? null : env.conf();
  }

  private static String get(SparkConf conf, String key) {
    if (conf == null) {
      return "";
    }
    String v = conf.get(key, "");
    return v == null ? "" : v.trim();
  }

  /** Delta accepts each log store key with and without its {@code spark.} prefix. */
  private static String deltaKey(SparkConf conf, String suffix) {
    String v = get(conf, "spark.delta.logStore." + suffix);
    return v.isEmpty() ? get(conf, "delta.logStore." + suffix) : v;
  }

  /** The class that really writes {@code scheme}'s log files under the guard. */
  static String delegateClass(String scheme) {
    String v = get(sparkConf(), delegateKey(scheme));
    return v.isEmpty() ? deltaDefault(scheme) : v;
  }

  /** A new instance of {@code scheme}'s delegate; a misconfiguration names the key that caused it. */
  static LogStore createDelegate(String scheme, Configuration hadoopConf) {
    String name = delegateClass(scheme);
    Class<?> cls;
    try {
      cls = load(name);
    } catch (ClassNotFoundException e) {
      throw new GuardUnavailableException("the log store " + name + " that " + delegateKey(scheme)
          + " names for " + scheme + ":// tables cannot be loaded (is its jar on spark.jars?)", e);
    }
    if (!LogStore.class.isAssignableFrom(cls) || GuardedLogStore.class.isAssignableFrom(cls)) {
      throw new GuardUnavailableException(delegateKey(scheme) + " = " + name + " must name a log store"
          + " that extends io.delta.storage.LogStore and is not the guard's own store");
    }
    try {
      Constructor<?> ctor = cls.getConstructor(Configuration.class);
      return (LogStore) ctor.newInstance(hadoopConf);
    } catch (ReflectiveOperationException e) {
      throw new GuardUnavailableException("cannot create the log store " + name + " (" + delegateKey(scheme)
          + "): it needs a public constructor taking a Hadoop Configuration: " + e, e);
    }
  }

  private static Class<?> load(String name) throws ClassNotFoundException {
    ClassLoader context = Thread.currentThread().getContextClassLoader();
    if (context != null) {
      try {
        return Class.forName(name, false, context);
      } catch (ClassNotFoundException e) {
        // fall through to the shim's own loader
      }
    }
    return Class.forName(name, false, LogStoreWiring.class.getClassLoader());
  }

  private static boolean isGuarded(String name) {
    if (name.isEmpty()) {
      return false;
    }
    try {
      return GuardedLogStore.class.isAssignableFrom(load(name));
    } catch (ClassNotFoundException e) {
      return false;
    }
  }

  /** The default schemes plus any scheme the configuration names a log store or delegate for. */
  static Set<String> schemes(SparkConf conf) {
    Set<String> out = new TreeSet<>(SCHEMES);
    if (conf != null) {
      for (String prefix : new String[] {"spark.delta.logStore.", "delta.logStore.", DELEGATE_PREFIX}) {
        for (Tuple2<String, String> kv : conf.getAllWithPrefix(prefix)) {
          String rest = kv._1();
          int dot = rest.indexOf('.');
          if (dot > 0 && (rest.endsWith(".impl") || rest.endsWith(DELEGATE_SUFFIX))) {
            out.add(rest.substring(0, dot).toLowerCase(Locale.ROOT));
          }
        }
      }
    }
    return out;
  }

  /**
   * One sentence per scheme whose commits a guarded session would not check (empty when every
   * scheme is wired through the guard's log store and its delegate can be loaded).
   */
  public static List<String> unguarded(SparkConf conf) {
    List<String> out = new ArrayList<>();
    String global = deltaKey(conf, "class");
    if (!global.isEmpty() && !isGuarded(global)) {
      out.add("spark.delta.logStore.class = " + global + " sends the commits of every scheme past the"
          + " guard's check: remove it and set spark.delta.logStore.<scheme>.impl="
          + Guard.LOG_STORE_CLASS + " with your store as " + DELEGATE_PREFIX + "<scheme>" + DELEGATE_SUFFIX);
      return out;
    }
    List<String> plain = new ArrayList<>();
    for (String scheme : schemes(conf)) {
      String impl = global.isEmpty() ? deltaKey(conf, scheme + ".impl") : global;
      if (!isGuarded(impl)) {
        plain.add(scheme + ":// (" + (impl.isEmpty() ? "unset: Delta's " + deltaDefault(scheme) : impl) + ")");
        continue;
      }
      String delegate = get(conf, delegateKey(scheme));
      if (!delegate.isEmpty()) {
        try {
          Class<?> cls = load(delegate);
          if (!LogStore.class.isAssignableFrom(cls) || GuardedLogStore.class.isAssignableFrom(cls)) {
            out.add(delegateKey(scheme) + " = " + delegate + " is not a usable delegate: it must extend"
                + " io.delta.storage.LogStore and not be the guard's own store");
          }
        } catch (ClassNotFoundException e) {
          out.add(delegateKey(scheme) + " = " + delegate + " cannot be loaded (is its jar on spark.jars?)");
        }
      }
    }
    if (!plain.isEmpty()) {
      out.add("commits to " + String.join(", ", plain) + " tables would go unchecked: set"
          + " spark.delta.logStore.<scheme>.impl=" + Guard.LOG_STORE_CLASS + " for each (a store of your"
          + " own goes to " + DELEGATE_PREFIX + "<scheme>" + DELEGATE_SUFFIX + ", which the guard wraps)");
    }
    return out;
  }

  /** Per scheme: the configured store, whether it is the guard's, and the delegate (for doctor). */
  static ObjectNode statusJson(SparkConf conf) {
    ObjectNode out = JSON.createObjectNode();
    String global = deltaKey(conf, "class");
    for (String scheme : schemes(conf)) {
      String impl = global.isEmpty() ? deltaKey(conf, scheme + ".impl") : global;
      ObjectNode s = out.putObject(scheme);
      s.put("impl", impl.isEmpty() ? deltaDefault(scheme) : impl);
      s.put("guarded", isGuarded(impl));
      String delegate = get(conf, delegateKey(scheme));
      s.put("delegate", delegate.isEmpty() ? deltaDefault(scheme) : delegate);
      s.put("delegate_configured", !delegate.isEmpty());
    }
    return out;
  }
}
