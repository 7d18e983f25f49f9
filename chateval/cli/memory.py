"""``chateval memory ...``: list the memory systems, or ask one a LongMemEval question."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ..util.errors import ConfigError
from ..util.secrets import redact_url
from ..util.tables import print_table
from .evaluate import add_price_option
from .options import add_model_options

if TYPE_CHECKING:  # rich is imported when a command prints, not for --help
    from rich.console import Console

EMBEDDER_HELP = (
    "local/all-MiniLM-L6-v2 (default, as in the benchmarks; needs the [local] extra), hash (instant, "
    "deterministic, lexical only), openai/<model> (OPENAI_API_KEY) or openai-compatible/<model> (an "
    "embedding server); embeddings are cached on disk"
)


def default_embedder() -> str:
    """The benchmarks' embedder, so `memory ask` answers as a benchmark unit would."""
    from ..bench.config import MemoryBenchConfig

    return str(MemoryBenchConfig.model_fields["embedder"].default)


def add_parser(sub: Any) -> None:
    mp = sub.add_parser(
        "memory",
        help="memory systems: list them, ask one a LongMemEval question",
        description="Memory systems for multi-session chat.",
    )
    msub = mp.add_subparsers(dest="memory_command", metavar="SUBCOMMAND")
    mp.set_defaults(memory_help=mp.print_help)

    ls = msub.add_parser(
        "list",
        help="list the memory systems with their papers and settings",
        description="List the registered memory systems: description, paper and knobs "
        "(settings for --set, with their defaults).",
    )
    ls.add_argument("--plugin", action="append", dest="plugins", help="a .py file or module registering a system")

    ask = msub.add_parser(
        "ask",
        help="ingest one LongMemEval question's sessions into a system and answer it",
        description="Ingest the sessions of one LongMemEval question (oracle, S or M file, unchanged) in date "
        "order, answer the question at its question_date, and show the answer, the gold answer, "
        "the recalled memories with their provenance, the context size and the LLM calls.",
        epilog="exit codes: 0 answered; 1 a model call failed; 2 bad input or settings (unknown system, bad "
        "--set, question not in the file, Qdrant unreachable).",
    )
    ask.add_argument("--system", required=True, help="memory system name (see `chateval memory list`)")
    ask.add_argument(
        "--data",
        required=True,
        help="a LongMemEval JSON file (official format): a path, a catalog name (longmemeval-oracle, "
        "longmemeval-s, longmemeval-m) or a file name `chateval data get` puts in the data folder",
    )
    ask.add_argument("--question-id", required=True, help="question_id of the question to ask")
    ask.add_argument("--embedder", help=EMBEDDER_HELP)  # None: default_embedder(), resolved when it runs
    ask.add_argument("--embedder-base-url", help="endpoint of a remote embedder (default: the first --base-url)")
    ask.add_argument("--embedder-batch-size", type=int, default=128, help="texts per embedding request")
    ask.add_argument(
        "--qdrant-url", help="Qdrant server URL, e.g. http://localhost:6333 (default: embedded, in memory)"
    )
    ask.add_argument(
        "--set",
        action="append",
        default=[],
        dest="settings",
        metavar="KEY=VALUE",
        help="a setting of the system (repeatable); values are read as JSON when they parse, "
        "else as text: --set k=10 --set truncate=none",
    )
    ask.add_argument("--show-context", action="store_true", help="print the whole context given to the answering model")
    ask.add_argument("--plugin", action="append", dest="plugins", help="a .py file or module registering a system")
    from ..evaluation.config import EvalConfig

    add_model_options(
        ask, EvalConfig, exclude=[f for f in EvalConfig.model_fields if f not in MODEL_FIELDS], title="model"
    )
    add_price_option(ask)


def embedder_url(args: argparse.Namespace) -> str | None:
    from ..util.options import check_base_url

    try:
        return check_base_url(args.embedder_base_url) or args.base_url
    except ValueError as e:
        raise ConfigError(f"--embedder-base-url: {e}") from None


MODEL_FIELDS = (
    "model",
    "base_url",
    "temperature",
    "max_tokens",
    "seed",
    "structured",
    "max_connections",
    "max_retries",
    "timeout_s",
    "retry_base_delay_s",
    "cache",
    "cache_dir",
)


def run(args: argparse.Namespace, console: Console) -> int:
    from ..util.extras import require

    require("memory", "chateval memory")
    if args.memory_command == "list":
        return cmd_list(args)
    if args.memory_command == "ask":
        return cmd_ask(args, console)
    args.memory_help()
    return 2


# --- list ------------------------------------------------------------------------------------
def knobs(settings_cls: Any) -> str:
    """``name=default`` for each field of a system's Settings model."""
    out = []
    for name, field in settings_cls.model_fields.items():
        value = "(required)" if field.is_required() else repr(field.get_default(call_default_factory=True))
        out.append(f"{name}={value}")
    return ", ".join(out) or "-"


def cmd_list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from ..memory import (
        MEMORY_SYSTEMS,
        systems,  # noqa: F401  (registers the built-in systems)
    )
    from ..util.plugins import load_plugins

    load_plugins(args.plugins or [])
    table = Table(
        "system",
        "description",
        "paper",
        "knobs",
        show_lines=True,
        caption="set a knob: chateval bench ... --set SYSTEM.name=value; chateval memory ask ... --set name=value",
    )
    for column in table.columns:
        column.overflow = "fold"  # never cut a name or a default short
    for name in MEMORY_SYSTEMS.names():
        cls = MEMORY_SYSTEMS.get(name)
        table.add_row(name, cls.description or "-", cls.paper or "-", knobs(cls.Settings).replace(", ", "\n"))
    print_table(Console(), table)
    return 0


# --- ask -------------------------------------------------------------------------------------
def parse_settings(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set '{pair}': expected KEY=VALUE")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw  # plain text, e.g. --set truncate=none
        out[key.strip()] = value
    return out


def probe_qdrant(url: str) -> None:
    """Fail fast, in one line, when nothing answers at a Qdrant URL (before any ingest)."""
    if not url.startswith(("http://", "https://")):
        raise ConfigError(
            f"--qdrant-url '{redact_url(url)}': expected an http:// or https:// URL (e.g. http://localhost:6333)"
        )
    from ..memory.vector import check_server

    check_server(url)  # with $QDRANT_API_KEY, as the stores will connect


def build_layer(args: argparse.Namespace) -> Any:
    from ..evaluation.evaluator import layer_from_config
    from .evaluate import config_from_args

    return layer_from_config(config_from_args(args))


def cmd_ask(args: argparse.Namespace, console: Console) -> int:
    import asyncio

    from ..datasets import load_longmemeval
    from ..datasets.locate import find_data
    from ..memory import (
        MEMORY_SYSTEMS,
        systems,  # noqa: F401  (registers the built-in systems)
    )
    from ..memory.blind import Blind
    from ..memory.embeddings import make_embedder
    from ..memory.vector import collection_prefix
    from ..util.plugins import load_plugins

    # Everything that can be wrong with the options fails here, before any data or model work.
    if args.embedder_batch_size < 1:
        raise ConfigError(f"--embedder-batch-size {args.embedder_batch_size}: must be at least 1")
    load_plugins(args.plugins or [])
    cls = MEMORY_SYSTEMS.get(args.system)
    settings = parse_settings(args.settings)
    if args.qdrant_url:
        probe_qdrant(args.qdrant_url)
    layer = build_layer(args)
    try:
        embedder = make_embedder(
            args.embedder or default_embedder(),
            layer=layer,
            base_url=embedder_url(args),
            batch_size=args.embedder_batch_size,
        )
        system = cls(layer, settings=settings, embedder=embedder, qdrant=args.qdrant_url)
        system.collection_prefix = collection_prefix("ask", args.question_id)  # readable on a shared server
        questions = load_longmemeval(find_data(args.data, "LongMemEval"))
        question = next((q for q in questions if q.question_id == args.question_id), None)
        if question is None:
            raise ConfigError(
                f"{args.data}: no question with question_id '{args.question_id}' "
                f"({len(questions)} questions in the file)"
            )
    except BaseException:
        asyncio.run(layer.close())
        raise
    if layer.spec.is_offline:
        console.print(
            "[yellow]offline model:[/yellow] memories and answers are extractive heuristics, not LLM output.",
            highlight=False,
        )
    console.print(f"ingesting {len(question.sessions)} session(s) into {cls.name} ...", highlight=False)
    blind = Blind(question.sessions)

    async def go() -> Any:
        try:
            await system.ingest_all(blind.sessions)  # opaque ids, no gold: as a benchmark gives them
            return blind.response(await system.respond(question.question, question.question_date))
        finally:
            try:
                await system.aclose()  # deletes its Qdrant collection (what it shows next is kept in memory)
            finally:
                await layer.close()

    response = asyncio.run(go())
    show_answer(args, cls, system, question, response)
    return 0


def _provenance(turn_ids: list[str], shown: int = 3) -> str:
    more = len(turn_ids) - shown
    return ", ".join(turn_ids[:shown]) + (f" +{more}" if more > 0 else "")


def show_answer(args: argparse.Namespace, cls: Any, system: Any, question: Any, response: Any) -> None:
    from rich.console import Console
    from rich.text import Text

    out = Console()

    def line(label: str, value: str) -> None:
        out.print(Text(f"{label:<10}", style="bold") + Text(value), soft_wrap=True)

    stats = system.stats()
    settings = ", ".join(f"{k}={v!r}" for k, v in system.settings.model_dump().items())
    line("system", f"{cls.name} ({settings})" if settings else cls.name)
    line(
        "question", f"{question.question_id} [{question.question_type}], asked {question.question_date:%Y-%m-%d %H:%M}"
    )
    line("", question.question)
    later = [s.id for s in question.sessions if s.date > question.question_date]
    line(
        "sessions",
        f"{stats.sessions} ingested in date order ({stats.empty_sessions} empty), "
        f"{stats.items} memory item(s)" + (f"; {len(later)} dated after the question" if later else ""),
    )
    line("answer", response.answer)
    line("gold", question.answer)
    evidence = set(question.answer_session_ids)
    if response.recalled:
        line("recalled", f"{len(response.recalled)} item(s), best first (* = an evidence session of the question)")
        for n, item in enumerate(response.recalled, start=1):
            score = "" if item.score is None else f"score {item.score:.3f}  "
            star = " *" if item.session_id in evidence else ""
            out.print(
                Text(
                    f"  {n}. [{item.time:%Y-%m-%d %H:%M}] {score}session {item.session_id}{star}  "
                    f"turns {_provenance(item.turn_ids)}",
                    style="dim",
                ),
                soft_wrap=True,
            )
            out.print(Text(f"     {item.text}"), soft_wrap=True)
    elif cls.supports_recall:
        line("recalled", "nothing for this question")
    else:
        line("recalled", "- (this system recalls no items: its context is built from all sessions)")
    line(
        "context",
        f"{response.context_tokens} tokens (approx.)" + ("" if args.show_context else "; --show-context prints it"),
    )
    if args.show_context:
        out.print(Text(response.context or "(empty)"), soft_wrap=True)
    usage = response.usage
    line(
        "llm calls",
        f"{stats.llm_calls} ({stats.llm_calls - usage.calls} ingesting, {usage.calls} answering), "
        f"{stats.cached_calls} cached; answer prompt {usage.prompt_tokens} tokens"
        + (" (approx.)" if usage.tokens_approx else "")
        + ("" if usage.cost_usd is None else f", ${usage.cost_usd:.4f}"),
    )
