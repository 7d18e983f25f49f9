"""A minimal memory agent to benchmark: keep every user turn, recall the k that share the most
words with the question. Run it through any benchmark with
    chateval bench longmemeval --plugin examples/my_memory.py --systems my_memory --data FILE --out runs/mine
"""

from pydantic import BaseModel

from chateval.memory import MemoryItem, MemorySystem, format_items, memory_system


class Settings(BaseModel):
    k: int = 5  # memories in the prompt; set with --set my_memory.k=10


@memory_system("my_memory")
class MyMemory(MemorySystem):
    description = "user turns ranked by word overlap with the question"
    Settings = Settings
    uses_embedder = False  # it embeds nothing: a run needs no embedding model (nor its extra) for it

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.turns: list[MemoryItem] = []

    async def _ingest(self, session):
        for turn in session.turns:
            if turn.role == "user":
                self.turns.append(MemoryItem(id=turn.id, text=turn.content, time=session.date,
                                             session_id=session.id, turn_ids=[turn.id]))

    async def _recall(self, query, now, k):
        words = set(query.lower().split())
        ranked = sorted(self.turns, key=lambda m: -len(words & set(m.text.lower().split())))
        return ranked[: k or self.settings.k]

    async def context(self, question, now, items):
        return format_items(items)

    def item_count(self):
        return len(self.turns)

    def _reset(self):
        self.turns.clear()
