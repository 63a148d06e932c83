package io.icecompat.shim.guard;

/**
 * A Delta write the guard refused: the violations, as the rule service reported them.
 *
 * <p>The message is the rendered report (profile, rule id, column path, fix per violation) so that
 * a Scala or SQL user sees exactly what a Python user of {@code compat_write} sees; {@link
 * #violationsJson()} carries the same violations as data, for the Python side to rebuild its own
 * exception type from.
 */
public final class GuardViolationException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final String violationsJson;

  public GuardViolationException(String message, String violationsJson) {
    super(message);
    this.violationsJson = violationsJson;
  }

  /** The violations as a JSON array of objects (profile, rule, path, message, fix, ...). */
  public String violationsJson() {
    return violationsJson;
  }
}
