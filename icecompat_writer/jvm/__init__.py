"""The JVM bridge: the only part of the package that talks to py4j (see :mod:`.bridge`)."""
