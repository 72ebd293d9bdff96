"""Every diagnostic and rejection code, defined once.

A code is the stable name a caller matches on: it never changes meaning
between releases. Each entry records its default severity, the spec page the
rule comes from, what to do about it, and, for a rejection, the spec sentence
that makes it the consumer's verdict (:mod:`agui_pipeline.catalog.code`).
``agui-pipeline explain CODE`` prints one; the documentation site's Diagnostic codes and
Rejections pages are generated from :data:`ALL` when it is built. Stages import the entries
they emit; nothing else mints a code.

The codes live by family, in the order of the stages (each module's codes join
:data:`ALL` as it is imported, so the order here is the order of the reference).
"""

# The families in the order of the stages, not sorted: each module's codes join ALL as it
# is imported, and that is the order of the reference pages.
# ruff: noqa: I001
from agui_pipeline.catalog.code import *  # noqa: F403
from agui_pipeline.catalog.reading import *  # noqa: F403
from agui_pipeline.catalog.boundary import *  # noqa: F403
from agui_pipeline.catalog.sequence import *  # noqa: F403
from agui_pipeline.catalog.producer import *  # noqa: F403
from agui_pipeline.catalog.delivery import *  # noqa: F403
