"""Built-in memory systems; importing this package registers them."""
from . import full_context  # noqa: F401
from . import session_summaries  # noqa: F401
from . import rsum  # noqa: F401
from . import retrieval  # noqa: F401
from . import memory_update  # noqa: F401
from . import memorybank  # noqa: F401
from . import generative_agents  # noqa: F401
from . import human_like  # noqa: F401
from . import theanine  # noqa: F401
from . import theanine_ablations  # noqa: F401
from . import longmemeval_rag  # noqa: F401
from . import http_agent  # noqa: F401

# zep needs the optional extra (pip install "chateval[zep]"): registered only when graphiti-core
# (with its kuzu extra) is importable. Any other ImportError is a real bug and propagates.
try:
    from ..zep import system as _zep  # noqa: F401
except ImportError as e:
    if (e.name or "").split(".")[0] not in ("graphiti_core", "kuzu"):
        raise
