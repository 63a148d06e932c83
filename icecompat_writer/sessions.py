"""Creating or configuring a SparkSession that carries Delta and the icecompat shim.

The jars are resolved at build time by the shim's Maven build and copied into ``icecompat_writer/jars``
(or the folder named by ``ICECOMPAT_JARS_DIR``), so a session never downloads packages at run time.
One build serves every supported Spark line: the shim, the agent and the Delta jars every line shares
sit in that folder, and each line's own delta-spark jar in ``spark-<major>.<minor>/``; the line is
picked from the running pyspark when the session is configured, and a Spark the build has no folder
for is refused (:class:`~icecompat_writer.errors.UnsupportedSparkVersion`) before any JVM starts.
Settings the user already has on ``spark.jars`` and ``spark.sql.extensions`` are appended to, never
replaced: a team's own extensions keep working.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from .errors import SessionConfigError, SetupError, SparkConnectNotSupported, UnsupportedSparkVersion
from .jvm import bridge

__all__ = [
    "DELTA_CATALOG",
    "DELTA_EXTENSION",
    "GUARD_SCHEMES",
    "LEAN_DEFAULTS",
    "SHIM_JAR_NAME",
    "configure",
    "delegate_key",
    "delta_coordinates",
    "guard_log_store_settings",
    "jars_dir",
    "line_jars_dir",
    "log_store_key",
    "require_supported_spark",
    "runtime_jars",
    "session",
    "spark_defaults",
    "spark_line",
    "submit_arguments",
    "supported_lines",
]

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
SHIM_JAR_NAME = "icecompat-shim.jar"
AGENT_JAR_NAME = "icecompat-agent.jar"
JARS_DIR_ENV = "ICECOMPAT_JARS_DIR"
# jars/spark-<major>.<minor>/ holds one Spark line's delta-spark jar (jvm_shim/pom.xml, copy-line-jars)
LINE_DIR_PREFIX = "spark-"
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:[.+\-].*)?$")
# The session guard (jvm_shim io.icecompat.shim.guard): its extension, its log store, its settings.
GUARD_EXTENSION = "io.icecompat.shim.guard.GuardExtension"
GUARD_LOG_STORE = "io.icecompat.shim.guard.GuardedLogStore"
LOG_STORE_KEY = "spark.delta.logStore.file.impl"
# Every scheme Delta picks a log store for by name (s3/s3a/s3n, the Azure schemes, gs) plus the local and
# HDFS ones: each gets the guard's log store, which wraps the scheme's own Delta store (its delegate).
GUARD_SCHEMES = ("file", "hdfs", "s3", "s3a", "s3n", "abfs", "abfss", "adl", "wasb", "wasbs", "gs")
GLOBAL_LOG_STORE_KEYS = ("spark.delta.logStore.class", "delta.logStore.class")
GUARD_ENABLED_KEY = "spark.icecompat.guard.enabled"
GUARD_PROFILE_KEY = "spark.icecompat.profile"
GUARD_PYTHON_KEY = "spark.icecompat.python"

log = logging.getLogger(__name__)

# Small, local, quiet: what a laptop, a notebook and a 2-core CI machine want by default. Every entry
# is only a default; a value the caller sets wins.
LEAN_DEFAULTS: Mapping[str, str] = {
    "spark.master": "local[2]",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.log.level": "WARN",
    "spark.sql.adaptive.enabled": "true",
}


def jars_dir() -> Path:
    """Where the runtime jars live: ``$ICECOMPAT_JARS_DIR`` or the package's own ``jars`` folder."""
    override = os.environ.get(JARS_DIR_ENV)
    if override:
        return Path(override).expanduser().resolve()
    return (Path(__file__).resolve().parent / "jars").resolve()


def spark_line(version: str) -> str:
    """The line (``major.minor``) of a Spark version string: ``"4.1.4"`` -> ``"4.1"``.

    A string that is no Spark version is refused like an unsupported one.
    """
    match = _VERSION.match(version.strip())
    if match is None:
        raise UnsupportedSparkVersion(version, supported_lines(), "(not a Spark version string)")
    return f"{match.group(1)}.{match.group(2)}"


def supported_lines(folder: Path | None = None) -> list[str]:
    """The Spark lines this installation has Delta jars for, oldest first (``["4.0", "4.1", "4.2"]``)."""
    base = folder if folder is not None else jars_dir()
    lines = []
    for sub in base.glob(f"{LINE_DIR_PREFIX}*"):
        line = sub.name.removeprefix(LINE_DIR_PREFIX)
        if _VERSION.match(line) and any(sub.glob(f"delta-spark_{line}_*.jar")):
            lines.append(line)
    return sorted(lines, key=lambda line: tuple(int(part) for part in line.split(".")))


def _pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def line_jars_dir(spark_version: str | None = None) -> Path:
    """The folder with the delta-spark jar for ``spark_version`` (default: the running pyspark).

    Raises :class:`UnsupportedSparkVersion` (listing the supported lines) for a Spark line the build
    has no jars for.
    """
    version = spark_version if spark_version is not None else _pyspark_version()
    line = spark_line(version)
    supported = supported_lines()
    if line not in supported:
        raise UnsupportedSparkVersion(version, supported)
    return jars_dir() / f"{LINE_DIR_PREFIX}{line}"


def runtime_jars(spark_version: str | None = None) -> list[Path]:
    """Every jar the plugin needs on the Spark classpath (absolute paths), shim jar first, for the Spark
    line of ``spark_version`` (default: the running pyspark's).

    Raises :class:`SetupError` when the shim was never built, naming the command that builds it, and
    :class:`UnsupportedSparkVersion` for a Spark line the build has no Delta jars for.
    """
    folder = jars_dir()
    shim = folder / SHIM_JAR_NAME
    if not shim.is_file():
        raise SetupError(
            f"the icecompat shim jar is missing ({shim}); build it with `bin/setup` "
            f"(Maven, jvm_shim/pom.xml) or point {JARS_DIR_ENV} at a folder that has it"
        )
    shared = sorted(p for p in folder.glob("*.jar") if p.name not in {SHIM_JAR_NAME, AGENT_JAR_NAME})
    line = sorted(line_jars_dir(spark_version).glob("*.jar"))
    return [shim, *shared, *line]


def require_supported_spark(spark: SparkSession) -> None:
    """Refuse a running session whose JVM Spark is not the line its Delta jars were picked for.

    The jars follow the Python ``pyspark`` package; a ``SPARK_HOME`` of another Spark line under it
    (spark-submit of a different installation) would fail later inside delta-spark with a
    missing-method error, so it is refused here, naming both versions.
    """
    running = str(spark.version)
    line = spark_line(running)
    supported = supported_lines()
    if line not in supported:
        raise UnsupportedSparkVersion(running, supported)
    python_side = _pyspark_version()
    if spark_line(python_side) != line:
        raise UnsupportedSparkVersion(
            running,
            supported,
            f"This session's JVM runs Spark {running} but the Python pyspark is {python_side}, and the "
            "Delta jars were picked for the Python one: run the pyspark package of the same Spark line "
            "as SPARK_HOME",
        )


def agent_jar() -> Path:
    """The driver agent that teaches delta-spark the writer-compat features (see jvm_shim)."""
    jar = jars_dir() / AGENT_JAR_NAME
    if not jar.is_file():
        raise SetupError(f"the icecompat agent jar is missing ({jar}); build it with `bin/setup`")
    return jar


def _append_java_option(existing: str | None, option: str) -> str:
    """Append a JVM option to a space-separated option string unless it is already there."""
    current = (existing or "").split()
    return " ".join([*current, option]) if option not in current else " ".join(current)


def _append_csv(existing: str | None, items: Iterable[str]) -> str:
    """Append comma-separated items to an existing comma-separated value, skipping ones present."""
    current = [part.strip() for part in (existing or "").split(",") if part.strip()]
    for item in items:
        if item not in current:
            current.append(item)
    return ",".join(current)


def _builder_options(builder: SparkSession.Builder) -> dict[str, str]:
    """The options already set on a builder (pyspark keeps them in ``_options``)."""
    options = getattr(builder, "_options", None)
    if not isinstance(options, dict):
        raise SessionConfigError(
            "cannot read the options of this SparkSession.Builder; pass a pyspark "
            "SparkSession.builder from the pinned pyspark version"
        )
    return options


def _is_connect(options: Mapping[str, str]) -> bool:
    if options.get("spark.remote") or options.get("spark.api.mode", "").lower() == "connect":
        return True
    return bool(os.environ.get("SPARK_REMOTE")) or os.environ.get("SPARK_CONNECT_MODE_ENABLED") == "1"


def log_store_key(scheme: str) -> str:
    """Delta's setting that picks the log store for ``scheme``'s tables."""
    return f"spark.delta.logStore.{scheme}.impl"


def delegate_key(scheme: str) -> str:
    """The guard's setting for the store that really writes ``scheme``'s log (default: Delta's own)."""
    return f"spark.icecompat.guard.logStore.{scheme}.delegate"


def _named_schemes(options: Mapping[str, str]) -> list[str]:
    """:data:`GUARD_SCHEMES` plus every scheme the options name a log store or a delegate for."""
    found = list(GUARD_SCHEMES)
    for key in options:
        for prefix, suffix in (
            ("spark.delta.logStore.", ".impl"),
            ("delta.logStore.", ".impl"),
            ("spark.icecompat.guard.logStore.", ".delegate"),
        ):
            if key.startswith(prefix) and key.endswith(suffix):
                scheme = key[len(prefix) : -len(suffix)].lower()
                if scheme and "." not in scheme and scheme not in found:
                    found.append(scheme)
    return found


def guard_log_store_settings(options: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The log store settings the guard needs on top of ``options``, and what they do to the user's.

    Every scheme's ``spark.delta.logStore.<scheme>.impl`` becomes the guard's log store. A store the
    user chose for a scheme (``spark.delta.logStore.<scheme>.impl`` or Delta's unprefixed
    ``delta.logStore.<scheme>.impl``) is kept: it becomes that scheme's delegate, which the guard's
    store wraps, so its guarantees (e.g. multi-cluster mutual exclusion on S3) stay in force and the
    guard still checks every commit; the returned notes say so. Refused with
    :class:`SessionConfigError` naming the key: ``spark.delta.logStore.class`` (Delta allows it only
    without any per-scheme key, and it would route every scheme past the check), and a scheme whose
    store and delegate name two different classes.
    """
    for key in GLOBAL_LOG_STORE_KEYS:
        value = options.get(key)
        if value not in (None, GUARD_LOG_STORE):
            raise SessionConfigError(
                f"{key} is set to {value!r}: one log store for every scheme, which Delta does not allow "
                "next to the per-scheme log stores the icecompat guard installs. Name your store per "
                f"scheme instead ({log_store_key('<scheme>')}={value}); the guard then wraps it as "
                f"{delegate_key('<scheme>')}"
            )
    if any(options.get(key) == GUARD_LOG_STORE for key in GLOBAL_LOG_STORE_KEYS):
        return {}, []  # the guard's store already serves every scheme (and picks each delegate)
    settings: dict[str, str] = {}
    notes: list[str] = []
    for scheme in _named_schemes(options):
        key = log_store_key(scheme)
        own = options.get(key) or options.get(key.removeprefix("spark."))
        if own is not None and own != GUARD_LOG_STORE:
            existing = options.get(delegate_key(scheme))
            if existing not in (None, own):
                raise SessionConfigError(
                    f"{key} is {own!r} and {delegate_key(scheme)} is {existing!r}: two different log "
                    f"stores for {scheme}:// tables. Keep one, as {delegate_key(scheme)} (the guard's "
                    f"store {GUARD_LOG_STORE} wraps it)"
                )
            settings[delegate_key(scheme)] = own
            notes.append(
                f"{scheme}:// commits: your log store {own} is kept and wrapped by the icecompat guard "
                f"({key}={GUARD_LOG_STORE}, {delegate_key(scheme)}={own})"
            )
        if options.get(key) != GUARD_LOG_STORE:
            settings[key] = GUARD_LOG_STORE
        short = key.removeprefix("spark.")
        if options.get(short) not in (None, GUARD_LOG_STORE):
            settings[short] = GUARD_LOG_STORE  # Delta refuses the two spellings with different values
    return settings, notes


def _refuse_foreign_running_session() -> None:
    """A classic session already running without our jars cannot be fixed: jars are static confs."""
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context  # noqa: SLF001 - pyspark exposes no public accessor
    if sc is None:
        return
    jars = sc.getConf().get("spark.jars", "") or ""
    extensions = sc.getConf().get("spark.sql.extensions", "") or ""
    missing = []
    if SHIM_JAR_NAME not in jars:
        missing.append(f"spark.jars lacks {SHIM_JAR_NAME}")
    if DELTA_EXTENSION not in extensions:
        missing.append(f"spark.sql.extensions lacks {DELTA_EXTENSION}")
    if missing:
        raise SessionConfigError(
            "a SparkSession is already running without the icecompat jars ("
            + "; ".join(missing)
            + "); these are static settings that a running session cannot take. Stop it "
            "(spark.stop()) and create the session with icecompat_writer.session(), or start it with "
            "conf/spark-defaults.conf"
        )


def configure(
    builder: SparkSession.Builder,
    *,
    lean: bool = True,
    guard: bool | None = None,
    profile: str | None = None,
) -> SparkSession.Builder:
    """Add Delta, the shim jars, the session guard and (optionally) lean local defaults to a builder.

    ``spark.jars`` and ``spark.sql.extensions`` are appended to; ``spark.sql.catalog.spark_catalog`` is
    set only when the user has not chosen one. The guard's static pieces (its extension and log
    store on every scheme, see :func:`guard_log_store_settings`) are always installed, because they
    cannot be added once the session runs. The guard is on: every Delta write to a table that
    declares a profile is planned and checked. ``guard=False`` (``spark.icecompat.guard.enabled=false``)
    opts out: such a session refuses writes to tables that declare a writer profile instead of
    letting delta-spark (which accepts the writer-compat properties only because of the package's
    driver agent) corrupt them. ``guard=None`` keeps a value already on the builder, else turns the
    guard on. ``profile=...`` (``spark.icecompat.profile``) holds every Delta write of the session to
    that profile. Python exceptions for the guard's refusals are installed for the process
    (:func:`icecompat_writer.jvm.bridge.install_exception_hook`). The Delta jars are those of the
    running pyspark's Spark line; a line the package has no jars for is refused first
    (:class:`UnsupportedSparkVersion`, listing the supported lines). Returns the same builder.
    """
    options = _builder_options(builder)
    if _is_connect(options):
        raise SparkConnectNotSupported(
            "icecompat_writer needs a classic SparkSession with an in-process JVM; Spark Connect "
            "(spark.remote / SPARK_REMOTE) cannot load the shim on the client. Install the shim jars "
            "and extension on the Connect server instead (see conf/README.md)"
        )
    jars = [str(p) for p in runtime_jars()]  # first: an unsupported Spark is refused before anything
    _refuse_foreign_running_session()
    builder.config("spark.jars", _append_csv(options.get("spark.jars"), jars))
    builder.config(
        "spark.sql.extensions",
        _append_csv(options.get("spark.sql.extensions"), [DELTA_EXTENSION, GUARD_EXTENSION]),
    )
    stores, notes = guard_log_store_settings(options)
    for key, value in stores.items():
        builder.config(key, value)
    for note in notes:
        log.warning(note)
    if GUARD_PYTHON_KEY not in options:
        builder.config(GUARD_PYTHON_KEY, sys.executable)
    if guard is not None or GUARD_ENABLED_KEY not in options:
        builder.config(GUARD_ENABLED_KEY, "false" if guard is False else "true")
    if profile is not None:
        builder.config(GUARD_PROFILE_KEY, profile)
    builder.config(
        "spark.driver.extraJavaOptions",
        _append_java_option(options.get("spark.driver.extraJavaOptions"), f"-javaagent:{agent_jar()}"),
    )
    if "spark.sql.catalog.spark_catalog" not in options:
        builder.config("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
    bridge.install_exception_hook()
    if lean:
        for key, value in LEAN_DEFAULTS.items():
            if key not in options:
                builder.config(key, value)
        if options.get("spark.master", "").startswith("local"):
            # A local driver talks only to itself: bind to loopback instead of guessing an interface.
            for key in ("spark.driver.host", "spark.driver.bindAddress"):
                if key not in options:
                    builder.config(key, "127.0.0.1")
    return builder


def delta_coordinates(spark_version: str | None = None) -> str:
    """The Maven coordinates of the delta-spark artifact for a Spark line (``spark.jars.packages``)."""
    line_dir = line_jars_dir(spark_version)
    jar = next(iter(sorted(line_dir.glob("delta-spark_*.jar"))))
    artifact, version = jar.stem.rsplit("-", 1)
    return f"io.delta:{artifact}:{version}"


def spark_defaults(
    relative_to: Path | None = None, *, spark_version: str | None = None, packages: bool = False
) -> str:
    """The text of a ``spark-defaults.conf`` that loads Delta and the shim for a Spark line.

    Jar paths are absolute, or relative to ``relative_to`` (the committed ``conf/spark-defaults.conf``
    is this text rendered relative to the project root, and a test keeps the two equal). The line is
    that of ``spark_version`` (default: the running pyspark); an unsupported one is refused
    (:class:`UnsupportedSparkVersion`). With ``packages``, delta-spark and its dependencies come from
    Maven (``spark.jars.packages``, for clusters that reach a Maven repository) and only the shim is
    named by path (it is not published to Maven).
    """

    def shown(jar: Path) -> str:
        return str(jar.relative_to(relative_to)) if relative_to is not None else str(jar)

    def shown_python() -> str:
        exe = Path(sys.executable)
        if relative_to is not None:
            # The project's own environment, from the project root (like the jar paths).
            return ".venv/bin/python"
        return str(exe)

    version = spark_version if spark_version is not None else _pyspark_version()
    jars = runtime_jars(version)
    paths = [shown(jars[0])] if packages else [shown(jar) for jar in jars]
    line = spark_line(version)
    where = (
        "The jar paths below are relative to the project root; from anywhere else, print a copy with\n"
        "# absolute paths with `icecompat conf` (see conf/README.md). The jars are built by `bin/setup`."
        if relative_to is not None
        else "Generated by `icecompat conf` for this installation: the jar paths are absolute."
    )
    lines = [
        "# icecompat_writer: Spark settings for spark-submit / SPARK_CONF_DIR / a notebook's SparkSession.",
        "# Use as is from the project root:   spark-submit --properties-file conf/spark-defaults.conf job.py",
        f"# {where}",
        f"# For Spark {line}.x (delta-spark {delta_coordinates(version).rsplit(':', 1)[1]}); every Spark "
        "line has its own Delta jar:",
        "# `icecompat conf --spark-version X.Y.Z` renders the settings of another one.",
        "",
        "spark.jars  " + ",".join(paths),
        *(
            [
                "# delta-spark and its dependencies from Maven (the cluster must reach a Maven repository)",
                f"spark.jars.packages  {delta_coordinates(version)}",
            ]
            if packages
            else []
        ),
        "",
        "# The driver agent that teaches delta-spark the icebergWriterCompatV1/V3 table features.",
        f"spark.driver.extraJavaOptions  -javaagent:{shown(agent_jar())}",
        "",
        "# Delta's own extension and catalog, then the icecompat guard's extension. Append further",
        "# extensions after these (comma-separated).",
        f"spark.sql.extensions              {DELTA_EXTENSION},{GUARD_EXTENSION}",
        f"spark.sql.catalog.spark_catalog   {DELTA_CATALOG}",
        "",
        "# The guard: every Delta write (SQL, DataFrameWriter V1/V2, Scala) to a table that declares a",
        "# profile is planned and checked by the same rules as compat_write. Set spark.icecompat.profile",
        "# (v3, writer-v1, writer-v3) to hold every Delta write of the job to one profile.",
        f"{GUARD_ENABLED_KEY}     true",
        "# The Python that runs the rules for the JVM (icecompat_writer must be importable from it).",
        f"{GUARD_PYTHON_KEY}     {shown_python()}",
        "",
        "# The guard's commit check, on every scheme: its log store wraps the scheme's own Delta log",
        "# store (S3SingleDriverLogStore for s3/s3a/s3n, AzureLogStore, GCSLogStore, HDFSLogStore). To",
        "# keep a log store of your own for a scheme, name it as the scheme's delegate, e.g.",
        f"# {delegate_key('s3a')}  io.delta.storage.S3DynamoDBLogStore",
        *(f"{log_store_key(scheme)}  {GUARD_LOG_STORE}" for scheme in GUARD_SCHEMES),
    ]
    return "\n".join(lines) + "\n"


def submit_arguments(defaults: str) -> list[str]:
    """The ``spark-submit`` command-line form of a :func:`spark_defaults` text: ``--jars``,
    ``--packages`` and one ``--conf key=value`` per further setting."""
    args: list[str] = []
    for raw in defaults.splitlines():
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        key, _, value = text.partition(" ")
        value = value.strip()
        if key == "spark.jars":
            args += ["--jars", value]
        elif key == "spark.jars.packages":
            args += ["--packages", value]
        else:
            args += ["--conf", f"{key}={value}"]
    return args


def session(
    app_name: str = "icecompat", *, guard: bool | None = None, profile: str | None = None, **conf: str
) -> SparkSession:
    """A local SparkSession with Delta and the shim loaded (or the running one, if it already has them).

    The session guard is on unless ``guard=False`` (see :func:`configure`).

    Spark settings are passed as keyword arguments with their full names, e.g.
    ``session(**{"spark.sql.warehouse.dir": "/data/wh"})``. A Spark line the package has no Delta jars
    for is refused before the JVM starts (:class:`UnsupportedSparkVersion`); the running session's
    Spark and Delta versions are checked against the jars it loaded.
    """
    builder = SparkSession.builder.appName(app_name)
    for key, value in conf.items():
        builder.config(key, value)
    spark = configure(builder, guard=guard, profile=profile).getOrCreate()
    require_supported_spark(spark)
    bridge.require_supported_delta(spark)
    return spark
