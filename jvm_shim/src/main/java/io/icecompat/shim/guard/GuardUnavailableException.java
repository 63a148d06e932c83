package io.icecompat.shim.guard;

/**
 * The guard is configured for this session but cannot do its job: the session extension did not
 * load, the driver agent is missing, or the rule service cannot be started. Guarded writes fail
 * with this rather than land unchecked.
 */
public class GuardUnavailableException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  public GuardUnavailableException(String message) {
    super(message);
  }

  public GuardUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
