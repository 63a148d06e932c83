"""The generic checks ("kinds") that rules are made of.

Each kind is one function from (context, rule) to findings, registered with the scope it needs, the
params a rule must give it, and the extra template fields its findings provide. Kinds know nothing
about any particular spec: the catalog (``catalog/``) turns them into spec rules by choosing params.
They are implemented here only: the session guard's JVM side asks the Python rule service
(:mod:`icecompat_writer.jvm.service`) instead of evaluating rules itself.

A check yields every problem it finds (never stops at the first one), in schema or file order, so
that one validation reports everything that is wrong.

The kinds live one module per thing they judge (:mod:`.protocol`, :mod:`.properties`, :mod:`.schema`,
:mod:`.replacement`, :mod:`.files`), registered into :data:`KINDS` by :mod:`.registry` as each module
is imported, in this order (the order docs/rules.md lists them in).
"""

from __future__ import annotations

# isort: off
from icecompat_writer.rules.kinds.registry import KINDS, Check, Kind, check_against_kinds, kind, kind_of
from icecompat_writer.rules.kinds import protocol, properties, schema, replacement, files

# isort: on

__all__ = ["FAMILIES", "KINDS", "Check", "Kind", "check_against_kinds", "kind", "kind_of"]

# The modules whose import registers the kinds, in registration order.
FAMILIES = (protocol, properties, schema, replacement, files)
