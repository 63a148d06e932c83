package io.icecompat.shim.guard;

/**
 * The rule service speaks another protocol version than this jar ({@link
 * ServiceMessages#PROTOCOL_VERSION}): the driver's jar and the Python package come from different
 * builds. Raised at the handshake that opens every service process, before any request is judged;
 * the Spark adapter raises it as {@code icecompat_writer.errors.RuleServiceMismatch}.
 */
public final class RuleServiceMismatchException extends GuardUnavailableException {
  private static final long serialVersionUID = 1L;

  public RuleServiceMismatchException(String message) {
    super(message);
  }
}
