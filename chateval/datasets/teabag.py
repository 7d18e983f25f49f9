"""The TeaBag file (``teabag.json``): TeaFarm's session summaries, counterfactual questions and
simulated sessions, saved so later runs (and other systems) meet the same questions."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .checks import UniqueIds
from .common import DatasetError, read_json
from .types import Turn

TEABAG_FILE = "teabag.json"
TEABAG_FORMAT = "teabag-1"


class SpeakerEvent(BaseModel):
    speaker: str = Field(description="who it is about: one of the speakers' names")
    event: str = Field(description="one self-contained sentence in that speaker's words (first person)")


class SessionSummary(BaseModel):
    session_id: str
    date: datetime
    events: list[SpeakerEvent]


class SimTurn(BaseModel):
    speaker: str
    text: str


class TeaQuestion(BaseModel):
    id: str
    asker: str
    listener: str
    question: str
    answer: str
    fact: str = ""
    session_id: str = ""
    date: datetime  # of the simulated session
    turns: list[SimTurn]  # the simulated opening; the question follows as the asker's last turn

    def dialogue(self) -> list[Turn]:
        """The new session as ``respond`` gets it, ending with the question."""

        def role(speaker: str) -> str:
            return f"{self.asker} (user)" if speaker == self.asker else f"{self.listener} (you)"

        turns = [
            Turn(id=f"{self.id}-t{i + 1}", role=role(t.speaker), content=t.text)
            for i, t in enumerate(self.turns)
            if t.text.strip()
        ]
        return turns + [Turn(id=f"{self.id}-q", role=role(self.asker), content=self.question)]


class TeaConversation(BaseModel):
    id: str
    speakers: list[str]
    summaries: list[SessionSummary]
    questions: list[TeaQuestion]


class TeaBag(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a file of another shape is refused, not read as empty

    format: str = TEABAG_FORMAT
    data: str = ""
    data_format: str = ""
    generator_model: str = ""
    per_speaker: int = 0
    conversations: list[TeaConversation] = Field(default_factory=list)

    @classmethod
    def load(cls, path: str | Path) -> TeaBag:
        raw = read_json(path, "TeaBag questions")
        try:
            bag = cls.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            raise DatasetError(
                f"{path}: not a TeaBag questions file ({'.'.join(map(str, err['loc']))}: {err['msg'].lower()})"
            ) from None
        if bag.format != TEABAG_FORMAT:
            raise DatasetError(f"{path}: TeaBag format '{bag.format}' (expected {TEABAG_FORMAT})")
        # Units are keyed conversation::question::system: each id once in its scope.
        convs = UniqueIds("conversation id", "")
        for i, c in enumerate(bag.conversations):
            convs.add(c.id, f"{path}: conversations[{i}]", f"conversations[{i}]")
            questions = UniqueIds("question id", "")
            for j, q in enumerate(c.questions):
                questions.add(q.id, f"{path}: conversations[{i}].questions[{j}]", f"questions[{j}]")
        return bag
