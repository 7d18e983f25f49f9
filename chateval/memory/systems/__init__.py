"""Built-in memory systems; importing this package registers them."""

from .. import MEMORY_SYSTEMS
from . import (
    full_context,  # noqa: F401
    generative_agents,  # noqa: F401
    http_agent,  # noqa: F401
    human_like,  # noqa: F401
    longmemeval_rag,  # noqa: F401
    memory_update,  # noqa: F401
    memorybank,  # noqa: F401
    retrieval,  # noqa: F401
    rsum,  # noqa: F401
    session_summaries,  # noqa: F401
    theanine,  # noqa: F401  (the package registers theanine and its ablations)
)

# zep needs the optional extra (pip install "chateval[zep]"): listed only when graphiti-core and
# kuzu are installed, and imported (about a second: graphiti, neo4j, openai) only when asked for.
MEMORY_SYSTEMS.register_lazy("zep", "chateval.memory.zep.system", requires=("graphiti_core", "kuzu"), extra="zep")
# mem0 likewise (pip install "chateval[mem0]"): the open-source mem0ai Memory, imported when asked for.
MEMORY_SYSTEMS.register_lazy("mem0", "chateval.memory.systems.mem0_system", requires=("mem0",), extra="mem0")
# LangMem likewise (pip install "chateval[langmem]"): LangChain's open-source memory manager.
MEMORY_SYSTEMS.register_lazy(
    "langmem", "chateval.memory.systems.langmem_system", requires=("langmem", "langchain_openai"), extra="langmem"
)
