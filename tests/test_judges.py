"""Judges: the panels a benchmark (or the Evaluator) builds from one EvalConfig."""

from __future__ import annotations

import pickle

import pytest

from chateval import ConfigError, EvalConfig
from chateval.debate import NO_PERSONA, Sample
from chateval.evaluation.judges import Judges

CHECK = Sample(id="q1", question="How many days?", answer="It was 12 days.", reference="12 days")


async def test_judges_a_sample_with_the_configured_task():
    judges = Judges(EvalConfig(task="correctness", model="offline", cache=False))
    result = await judges.judge(CHECK)
    assert result.status == "ok" and result.verdict.correct is True
    assert [p.slug for p in judges.personas] == ["general_public", "critic"] and judges.is_offline
    await judges.aclose()


def test_preset_with_settings_on_top():
    judges = Judges.from_preset("single", {"task": "correctness", "cache": False})
    assert judges.config.task == "correctness" and judges.config.framing == "none"
    assert judges.personas == [NO_PERSONA]
    assert judges.run_config()["judging"]["task"] == "correctness"


def test_settings_share_one_model_layer_and_keep_their_identities():
    one = Judges(EvalConfig(model="offline", cache=False, turns=1))
    two = Judges(EvalConfig(model="offline", cache=False, turns=2), layer=one.layer)
    assert two.layer is one.layer  # one cache, one connection limit, one meter
    assert one.run_config()["config_hash"] != two.run_config()["config_hash"]


def test_pickles_as_its_settings():
    # What a Ray worker receives: the config and model layer, rebuilt into the same judge.
    judges = Judges(EvalConfig(model="offline", cache=False, strategy="simultaneous", agents=3))
    copy = pickle.loads(pickle.dumps(judges))
    assert copy is not judges and copy.run_config()["config_hash"] == judges.run_config()["config_hash"]


def test_bad_strategy_fails_when_built():
    with pytest.raises(ConfigError, match="nope"):
        Judges(EvalConfig(model="offline", cache=False, strategy="nope"))
