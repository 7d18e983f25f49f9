"""The public data sets the benchmarks read: where each comes from, its licence, its files and
their checksums, and the data folder they are put in (``chateval data list`` / ``data get``).

The data folder is ``$CHATEVAL_DATA_DIR`` when set, else ``~/.cache/chateval/data`` (under
``$XDG_CACHE_HOME`` when set). It holds one sub-folder per data set family (``longmemeval/``,
``locomo/``, ``locomo_judged/``, ``msc/``, ``faireval/``, ``topical_chat/``, ``theanine/``), the layout of the
project's shared data folder, so either can be used as the other.

Checksums are only written here when they were computed from a byte-for-byte copy of the
official file (see each entry's ``provenance``); ``sha256: None`` means not pinned yet: the
download is then accepted by its size alone (when known) and ``data get`` prints the computed
sha256 so a maintainer can pin it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

DATA_DIR_ENV = "CHATEVAL_DATA_DIR"
MIRROR_ENV = "CHATEVAL_DATA_MIRROR"


def data_root() -> Path:
    """The data folder: ``$CHATEVAL_DATA_DIR``, else ``~/.cache/chateval/data``."""
    if os.environ.get(DATA_DIR_ENV):
        return Path(os.environ[DATA_DIR_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "chateval" / "data"


class RemoteFile(BaseModel):
    """A file as published: downloaded to ``path`` (relative to the data folder)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str  # also its path under a mirror (--mirror URL serves a data folder's layout)
    url: str
    sha256: str | None = None  # None: not pinned (no byte-for-byte copy was at hand to compute it)
    size: int | None = None  # exact bytes, when known


class BuiltFile(BaseModel):
    """A file our loaders read that is made from the downloaded ones (see ``conversion``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str
    sha256: str | None = None  # the expected result when the inputs match their checksums


class DataSet(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    title: str
    benchmarks: tuple[str, ...]  # the commands that read it
    files: tuple[RemoteFile, ...]
    reads: tuple[str, ...]  # the files (relative to the data folder) the loaders read
    built: tuple[BuiltFile, ...] = ()
    conversion: str | None = None  # a name in chateval.datasets.convert.CONVERSIONS
    size: str  # for the listing: download size, exact or as the host shows it
    licence: str
    source: str  # one line: who publishes it, where
    provenance: str  # where the URL and checksum were confirmed, and what is not


def _gh(repo: str, commit: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


_HF_LME = "https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned/resolve/main/"
_LME_LICENCE = "MIT (dataset card of xiaowu0162/longmemeval; code repo xiaowu0162/LongMemEval is MIT)"
_LME_PROVENANCE = (
    "Hugging Face xiaowu0162/longmemeval-cleaned (the 2025/09 'cleaned' release; the first release, "
    "xiaowu0162/longmemeval, names the S and M files longmemeval_s.json / longmemeval_m.json). The "
    "file names were confirmed from scripts that download them, not from a listing of the hub "
    "repository (no network here); sha256 not pinned: no byte-for-byte copy was at hand"
)
_FAIREVAL = "i-Eval/FairEval", "453c117a69159fd7b7de2f4e0519bac57bee21f4"
_LOCOMO = "snap-research/LoCoMo", "3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376"
_THEANINE = "kimnamssya/Theanine", "650797962eacd28f07b34a351b655303f1c8533d"
_USR = "SmartDataAnalytics/proxy_indicators", "5017317f0d03cdbc64a3a52c09fc0a6bf5c492b3"
_UNIEVAL = "maszhongming/UniEval", "d33e7b6cfebe97b2bafe435adbd818230d5a416a"
_AUDIT = "dial481/locomo-audit", "9493fb4b4af4256ed17a18e8fd0b3cfdeec29539"
_ZEP = "getzep/zep-papers", "4b7f26cc76cca20743314ba9acb8c2cb6adc42f6"
_ZEP_DATA = "kg_architecture_agent_memory/locomo_eval/data/"
_AUDIT_LICENCE = "CC BY-NC 4.0 (non-commercial; as LoCoMo itself)"
_JUDGED_PROVENANCE = (
    "URLs pinned to commit {commit}; sha256 and size computed from byte-for-byte copies of that "
    "commit's files (the project's shared locomo_judged folder)"
)

CATALOG: tuple[DataSet, ...] = (
    DataSet(
        name="longmemeval-oracle",
        title="LongMemEval, oracle split (500 questions, evidence sessions only)",
        benchmarks=("bench longmemeval", "memory ask"),
        files=(RemoteFile(path="longmemeval/longmemeval_oracle.json", url=_HF_LME + "longmemeval_oracle.json"),),
        reads=("longmemeval/longmemeval_oracle.json",),
        size="about 15 MB",
        licence=_LME_LICENCE,
        source="Wu et al. 2025 (ICLR), Hugging Face xiaowu0162/longmemeval-cleaned",
        provenance=_LME_PROVENANCE,
    ),
    DataSet(
        name="longmemeval-s",
        title="LongMemEval S (500 questions, ~115k tokens of history each)",
        benchmarks=("bench longmemeval", "memory ask"),
        files=(RemoteFile(path="longmemeval/longmemeval_s_cleaned.json", url=_HF_LME + "longmemeval_s_cleaned.json"),),
        reads=("longmemeval/longmemeval_s_cleaned.json",),
        size="about 280 MB",
        licence=_LME_LICENCE,
        source="Wu et al. 2025 (ICLR), Hugging Face xiaowu0162/longmemeval-cleaned",
        provenance=_LME_PROVENANCE,
    ),
    DataSet(
        name="longmemeval-m",
        title="LongMemEval M (500 questions, ~500 sessions of history each)",
        benchmarks=("bench longmemeval", "memory ask"),
        files=(RemoteFile(path="longmemeval/longmemeval_m_cleaned.json", url=_HF_LME + "longmemeval_m_cleaned.json"),),
        reads=("longmemeval/longmemeval_m_cleaned.json",),
        size="about 2.7 GB",
        licence=_LME_LICENCE,
        source="Wu et al. 2025 (ICLR), Hugging Face xiaowu0162/longmemeval-cleaned",
        provenance=_LME_PROVENANCE,
    ),
    DataSet(
        name="locomo",
        title="LoCoMo (10 conversations, 1,986 QA items)",
        benchmarks=("bench locomo",),
        files=(
            RemoteFile(
                path="locomo/locomo10.json",
                url=_gh(*_LOCOMO, "data/locomo10.json"),
                sha256="79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4",
                size=2805274,
            ),
        ),
        reads=("locomo/locomo10.json",),
        size="2.8 MB",
        licence="CC BY-NC 4.0 (non-commercial; the repository's LICENSE.txt)",
        source="Maharana et al. 2024 (ACL), GitHub snap-research/LoCoMo",
        provenance="URL pinned to commit 3eb6f2c; sha256 computed from that commit's blob",
    ),
    DataSet(
        name="locomo-audit",
        title="locomo-audit's errata of LoCoMo's gold answers (156 entries, 99 that change the answer)",
        benchmarks=("rejudge --errata", "bench locomo --errata"),
        files=(
            RemoteFile(
                path="locomo_judged/locomo_audit_errors.json",
                url=_gh(*_AUDIT, "errors.json"),
                sha256="f298ef46263fada20688a1d672be37d4f488c6da3b19343eea55ae5c1b5fe55e",
                size=150552,
            ),
        ),
        reads=("locomo_judged/locomo_audit_errors.json",),
        size="151 KB",
        licence=_AUDIT_LICENCE,
        source="GitHub dial481/locomo-audit (an audit of LoCoMo's gold answers against the transcripts)",
        provenance=_JUDGED_PROVENANCE.format(commit="9493fb4"),
    ),
    DataSet(
        name="locomo-audit-wrong",
        title="Deliberately wrong LoCoMo answers (specific but wrong, categories 1-4) with their judge's "
        "three recorded verdicts",
        benchmarks=("rejudge FILE:wrong",),
        files=(
            RemoteFile(
                path="locomo_judged/ap_v1_specific_wrong.json",
                url=_gh(*_AUDIT, "ap-baseline/v1/ap_eval_results_scored.json"),
                sha256="a83882eda3ff02fd04dace6edddd0ceed533a245fedb3069ffde02a9503c4e3a",
                size=656280,
            ),
        ),
        reads=("locomo_judged/ap_v1_specific_wrong.json",),
        size="656 KB",
        licence=_AUDIT_LICENCE,
        source="GitHub dial481/locomo-audit, ap-baseline/v1 (EverMemOS-style eval_results format)",
        provenance=_JUDGED_PROVENANCE.format(commit="9493fb4"),
    ),
    DataSet(
        name="locomo-audit-fc",
        title="A full-context LoCoMo baseline (gpt-4o-mini; chain-of-thought and 5-6-word answer prompts), "
        "three recorded judge runs each",
        benchmarks=("rejudge",),
        files=(
            RemoteFile(
                path="locomo_judged/fc_gpt-4o-mini_cot.json",
                url=_gh(*_AUDIT, "fc-baseline/results/gpt-4o-mini-cot/eval_results.json"),
                sha256="08212320401c65fa9a97f78dd18adfb1d527137ec9f04b1b518420aa8e651bfe",
                size=901582,
            ),
            RemoteFile(
                path="locomo_judged/fc_gpt-4o-mini_memos.json",
                url=_gh(*_AUDIT, "fc-baseline/results/gpt-4o-mini-memos/eval_results.json"),
                sha256="1c55eb0ee66f9eb784c222ec54492cc39702652baa4e6c66b7fb89a7bb8a3d8f",
                size=632147,
            ),
        ),
        reads=("locomo_judged/fc_gpt-4o-mini_cot.json", "locomo_judged/fc_gpt-4o-mini_memos.json"),
        size="1.5 MB",
        licence=_AUDIT_LICENCE,
        source="GitHub dial481/locomo-audit, fc-baseline (EverMemOS-style eval_results format)",
        provenance=_JUDGED_PROVENANCE.format(commit="9493fb4"),
    ),
    DataSet(
        name="zep-locomo",
        title="Zep's graded LoCoMo answers (1,540 QA of categories 1-4, one gpt-4o-mini grade each) and its responses",
        benchmarks=("rejudge",),
        files=(
            RemoteFile(
                path="locomo_judged/zep_locomo_grades.json",
                url=_gh(*_ZEP, _ZEP_DATA + "zep_locomo_grades.json"),
                sha256="2ecb701017bb007306e88abd1af88a9cddac06098e6a7f666e4640aadce23fc6",
                size=701745,
            ),
            RemoteFile(
                path="locomo_judged/zep_locomo_responses.json",
                url=_gh(*_ZEP, _ZEP_DATA + "zep_locomo_responses.json"),
                sha256="c4943a6e15013e8af07a079d285a0d8206282ff6815429db2f5f5d5d5ad28b6d",
                size=698752,
            ),
        ),
        reads=("locomo_judged/zep_locomo_grades.json", "locomo_judged/zep_locomo_responses.json"),
        size="1.4 MB",
        licence="Apache-2.0 (the zep-papers repository); the questions are LoCoMo's (CC BY-NC 4.0)",
        source="GitHub getzep/zep-papers, kg_architecture_agent_memory/locomo_eval/data",
        provenance=_JUDGED_PROVENANCE.format(commit="4b7f26c"),
    ),
    DataSet(
        name="msc",
        title="Multi-Session Chat (ParlAI release; sessions 2-5, train/valid/test)",
        benchmarks=("bench msc-response",),
        files=(
            RemoteFile(
                path="msc/msc_v0.1.tar.gz",
                url="http://parl.ai/downloads/msc/msc_v0.1.tar.gz",
                sha256="e640e37cf4317cd09fc02a4cd57ef130a185f23635f4003b0cee341ffcb45e60",
            ),
        ),
        reads=("msc/msc_session3_valid.jsonl",),
        conversion="msc-tarball",
        built=(
            BuiltFile(
                path="msc/msc_session3_valid.jsonl",
                sha256="752caabd8a56dce86861a81ec579d1f2c56411495a461a7c08d0266f5eec5b66",
            ),
        ),
        size="tarball size not recorded",
        licence="research use, as distributed by ParlAI (cite Xu et al. 2022)",
        source="Xu et al. 2022 (ACL), ParlAI task 'msc'",
        provenance="URL and tarball sha256 from ParlAI's parlai/tasks/msc/build.py; the extracted "
        "session_3/valid.txt checksum from a byte-identical copy (GitHub Nitrogen216/Rsum). Each "
        "msc_dialogue/session_N/SPLIT.txt in the tarball is written as msc_session{N}_{SPLIT}.jsonl "
        "(already one JSON object per line: copied unchanged)",
    ),
    DataSet(
        name="faireval",
        title="FairEval (80 Vicuna questions, ChatGPT vs Vicuna-13B, human majority label)",
        benchmarks=("bench faireval", "calibrate", "audit"),
        files=(
            RemoteFile(
                path="faireval/raw/question.jsonl",
                url=_gh(*_FAIREVAL, "question.jsonl"),
                sha256="32b519315704d3da88accb0cab4fd44622ff530fe49e450c1553030ce3e0f962",
                size=12884,
            ),
            RemoteFile(
                path="faireval/raw/answer/answer_gpt35.jsonl",
                url=_gh(*_FAIREVAL, "answer/answer_gpt35.jsonl"),
                sha256="c6545739b0738eba5f9348e77f680031aec076a72ecba71b3014e7b1b0dfe099",
                size=107603,
            ),
            RemoteFile(
                path="faireval/raw/answer/answer_vicuna-13b.jsonl",
                url=_gh(*_FAIREVAL, "answer/answer_vicuna-13b.jsonl"),
                sha256="d1a4b3a5d2e3ca90d2d55084ee25d4d90e63e65ac647bf50359da8633e16d0b8",
                size=131904,
            ),
            RemoteFile(
                path="faireval/raw/review/review_gpt35_vicuna-13b_human.txt",
                url=_gh(*_FAIREVAL, "review/review_gpt35_vicuna-13b_human.txt"),
                sha256="929f14e6582a7d14b1a3d189d29bc1319200588298e4b5429f7ac56bf847d224",
                size=633,
            ),
        ),
        reads=("faireval/faireval_gpt35_vs_vicuna13b.jsonl",),
        conversion="faireval-merge",
        built=(
            BuiltFile(
                path="faireval/faireval_gpt35_vs_vicuna13b.jsonl",
                sha256="f1f824f814d2cc24c61bee5208b02d6debc9eb0f49eb4788ee10ac55aa33737d",
            ),
        ),
        size="253 KB",
        licence="none stated (FairEval has no LICENSE file; answers from lm-sys/FastChat's eval set)",
        source="Wang et al. 2023, GitHub i-Eval/FairEval",
        provenance="URLs pinned to commit 453c117; sha256 computed from that commit's blobs. The four files are "
        "merged into faireval_gpt35_vs_vicuna13b.jsonl (one row per question: question, both answers, "
        "the human label)",
    ),
    DataSet(
        name="topical-chat",
        title="Topical-Chat USR annotations (60 contexts x 6 responses, per-annotator scores)",
        benchmarks=("bench topical-chat", "calibrate", "audit"),
        files=(
            RemoteFile(
                path="topical_chat/tc_usr_data.json",
                url=_gh(*_USR, "data/usr_topical_chat.json"),
                sha256="8e4e6961585f58edb573c0153766547442bde69577e8df6ba9e24a84dc9483e5",
                size=318219,
            ),
            RemoteFile(
                path="topical_chat/topical_chat_unieval.json",
                url=_gh(*_UNIEVAL, "reproduce/data/dialogue/topical_chat.json"),
                sha256="f6361daa6fe162f636d2071a60322a784acd770be0bf3a6920ac949d751b978a",
                size=669279,
            ),
        ),
        reads=("topical_chat/tc_usr_data.json", "topical_chat/topical_chat_unieval.json"),
        size="988 KB",
        licence="USR data: not stated (shikib.com/usr); UniEval's copy: MIT; the Topical-Chat corpus is Amazon's",
        source="Mehri & Eskenazi 2020 (USR); files from GitHub SmartDataAnalytics/proxy_indicators and maszhongming/UniEval",
        provenance="The USR page (shikib.com/usr, linked from GitHub Shikib/usr) could not be checked here; "
        "tc_usr_data.json comes from a copy of it in proxy_indicators @ 5017317, the per-response "
        "means from UniEval @ d33e7b6; sha256 computed from those commits' blobs",
    ),
    DataSet(
        name="theanine-sample",
        title="THEANINE's sample dialogue (one MSC episode, THEANINE's input format)",
        benchmarks=("bench teafarm",),
        files=(
            RemoteFile(
                path="theanine/sample_dialogue.json",
                url=_gh(*_THEANINE, "resources/data/sample_dialogue.json"),
                sha256="2a8a953bc3f32d87fee7c87e5699a424635f4ec9506ae8eb90a42052bd9d9597",
                size=10095,
            ),
        ),
        reads=("theanine/sample_dialogue.json",),
        size="10 KB",
        licence="none stated (no LICENSE file): a format fixture, do not redistribute",
        source="Ong et al. 2025 (NAACL), GitHub kimnamssya/Theanine",
        provenance="URL pinned to commit 6507979; sha256 computed from that commit's blob",
    ),
)


def names() -> list[str]:
    return [d.name for d in CATALOG]


def find(name: str) -> DataSet | None:
    return next((d for d in CATALOG if d.name == name), None)


def get_command(filename: str | Path) -> str | None:
    """``chateval data get NAME`` for a file some data set provides (matched by file name)."""
    base = Path(filename).name
    for d in CATALOG:
        if any(Path(p).name == base for p in d.reads):
            return f"chateval data get {d.name}"
    return None


def not_found_hint(filenames: Sequence[str]) -> str:
    """'; get it with `chateval data get NAME`' for the first file a data set provides, else ''."""
    for f in filenames:
        if cmd := get_command(f):
            return f"; get it with `{cmd}`"
    return ""
