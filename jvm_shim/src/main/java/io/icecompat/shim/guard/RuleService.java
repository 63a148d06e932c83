package io.icecompat.shim.guard;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The one place the rules run for the JVM: a long-lived Python process ({@code python -m
 * icecompat_writer.jvm.service}) that plans and validates with the same code {@code compat_write}
 * and {@code icecompat check} use. The JVM never re-implements a rule; it sends table states as
 * the JSON the Delta log holds and gets back a plan or violations.
 *
 * <p>One process per driver JVM and Python executable for the commit checks, started on first use;
 * requests to one process are serialised (one JSON line in, one JSON line out). Iceberg syncs go to
 * processes of their own ({@link #forSync}): a sync of a large table never holds a commit check of
 * the driver, syncs of one table run one after another in one process, and syncs of different
 * tables may run side by side. A process that died is restarted once per
 * request; a process that cannot be started makes every guarded write fail, never pass unchecked.
 * Every process starts with the protocol handshake ({@link ServiceMessages#hello}): a service of
 * another protocol version is refused ({@link RuleServiceMismatchException}) before its first answer.
 */
public final class RuleService {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static RuleService instance;
  private static final java.util.Map<Integer, RuleService> SYNC_SERVICES = new java.util.HashMap<>();

  private final String python;
  private Process process;
  private BufferedWriter in;
  private BufferedReader out;

  private RuleService(String python) {
    this.python = python;
  }

  /** The service for {@code python}, started lazily; a different executable replaces the old one. */
  public static synchronized RuleService get(String python) {
    if (instance == null || !instance.python.equals(python)) {
      if (instance != null) {
        instance.stop();
      }
      instance = new RuleService(python);
    }
    return instance;
  }

  /**
   * The sync process for {@code table}: one of {@code processes} processes of {@code python}, always
   * the same one for the same table (its syncs stay in order), apart from the commit-check process.
   */
  public static synchronized RuleService forSync(String python, String table, int processes) {
    int slot = Math.floorMod(table.hashCode(), Math.max(1, processes));
    RuleService service = SYNC_SERVICES.get(slot);
    if (service == null || !service.python.equals(python)) {
      if (service != null) {
        service.stop();
      }
      service = new RuleService(python);
      SYNC_SERVICES.put(slot, service);
    }
    return service;
  }

  /** Sends one request and returns the response object; the request's "op" names the operation. */
  public synchronized JsonNode call(ObjectNode request) {
    String line;
    try {
      line = JSON.writeValueAsString(request);
    } catch (IOException e) {
      throw new GuardUnavailableException("cannot encode a rule service request: " + e, e);
    }
    IOException last = null;
    for (int attempt = 0; attempt < 2; attempt++) {
      try {
        ensureStarted();
        JsonNode node = exchange(line);
        if (node.has(ServiceAnswers.ERROR)) {
          throw new GuardUnavailableException(
              "the icecompat rule service failed on " + request.path(ServiceMessages.OP).asText() + ": "
                  + node.get(ServiceAnswers.ERROR).asText());
        }
        return node;
      } catch (IOException e) {
        last = e;
        stop();
      }
    }
    throw new GuardUnavailableException(
        "the icecompat rule service (" + String.join(" ", command()) + ") is not available: "
            + last.getMessage()
            + ". Set spark.icecompat.python to a Python executable that has icecompat_writer installed.",
        last);
  }

  private List<String> command() {
    List<String> cmd = new ArrayList<>();
    cmd.add(python);
    cmd.add("-m");
    cmd.add("icecompat_writer.jvm.service");
    return cmd;
  }

  private void ensureStarted() throws IOException {
    if (process != null && process.isAlive()) {
      return;
    }
    ProcessBuilder pb = new ProcessBuilder(command());
    pb.redirectError(ProcessBuilder.Redirect.INHERIT);
    Path packageParent = packageParent();
    if (packageParent != null) {
      // The shim jar ships inside the Python package (icecompat_writer/jars): the same installation
      // the jar came from is the one whose rules run, whatever the interpreter's own path says.
      Map<String, String> env = pb.environment();
      String old = env.get("PYTHONPATH");
      env.put("PYTHONPATH", old == null || old.isEmpty() ? packageParent.toString()
          : packageParent + File.pathSeparator + old);
    }
    process = pb.start();
    in = new BufferedWriter(new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8));
    out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    handshake();
  }

  /**
   * The first exchange of every process: both sides' protocol versions. A service of another
   * version is stopped and refused ({@link RuleServiceMismatchException}) before it judges anything.
   */
  private void handshake() throws IOException {
    JsonNode answer = exchange(JSON.writeValueAsString(ServiceMessages.hello()));
    try {
      ServiceMessages.requireSameProtocol(answer, String.join(" ", command()));
    } catch (RuleServiceMismatchException e) {
      stop();
      throw e;
    }
  }

  private JsonNode exchange(String line) throws IOException {
    in.write(line);
    in.write('\n');
    in.flush();
    String answer = out.readLine();
    if (answer == null) {
      throw new IOException("the rule service exited (" + exitText() + ")");
    }
    return JSON.readTree(answer);
  }

  private static Path packageParent() {
    try {
      Path jar = Paths.get(RuleService.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      Path jars = jar.getParent();
      if (jars != null && jars.getFileName() != null && jars.getFileName().toString().equals("jars")) {
        Path pkg = jars.getParent();
        if (pkg != null && pkg.resolve("__init__.py").toFile().isFile() && pkg.getParent() != null) {
          return pkg.getParent();
        }
      }
    } catch (URISyntaxException | RuntimeException e) {
      // a jar outside the package: rely on the interpreter's own path
    }
    return null;
  }

  private String exitText() {
    try {
      process.waitFor(2, java.util.concurrent.TimeUnit.SECONDS);
      return process.isAlive() ? "still running" : "exit code " + process.exitValue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }

  private synchronized void stop() {
    if (process != null) {
      process.destroy();
      process = null;
    }
  }
}
