"""localjudge: offline RAG evaluation with a local GGUF judge.

Context recall (ragas), context position and context relevance (Mastra), judged by a model run
in-process by llama.cpp under a JSON grammar: valid, complete, reproducible verdicts, no network.
"""

from localjudge.decisions import Cutoffs
from localjudge.errors import (
    ConstraintError,
    ContextOverflowError,
    DataError,
    InvalidItemError,
    ItemError,
    LocalJudgeError,
    ModelError,
    OutputBudgetError,
    UsageError,
)
from localjudge.judge.llama import LlamaJudge, load_judge
from localjudge.judge.protocol import (
    Generation,
    GenerationStats,
    Judge,
    JudgeIdentity,
    JudgeRequest,
)
from localjudge.judge.schemas import budgeted
from localjudge.metrics import (
    ContextPosition,
    ContextRecall,
    ContextRelevance,
    MetricResult,
    MetricSettings,
)
from localjudge.run.evaluate.evaluation import evaluate, score
from localjudge.run.evaluate.file_run import eval_file
from localjudge.run.options import EvalOptions, Hooks, ScoringOptions
from localjudge.run.results import ItemResult
from localjudge.run.settings import build_metrics
from localjudge.scoring import RelevancePenalties
from localjudge.versions import DISTRIBUTION, package_version

#: the installed distribution's version (``localjudge-rag`` in the package metadata)
__version__ = package_version(DISTRIBUTION)

__all__ = [
    "ConstraintError",
    "ContextOverflowError",
    "ContextPosition",
    "ContextRecall",
    "ContextRelevance",
    "Cutoffs",
    "DataError",
    "EvalOptions",
    "Generation",
    "GenerationStats",
    "Hooks",
    "InvalidItemError",
    "ItemError",
    "ItemResult",
    "Judge",
    "JudgeIdentity",
    "JudgeRequest",
    "LlamaJudge",
    "LocalJudgeError",
    "MetricResult",
    "MetricSettings",
    "ModelError",
    "OutputBudgetError",
    "RelevancePenalties",
    "ScoringOptions",
    "UsageError",
    "__version__",
    "budgeted",
    "build_metrics",
    "eval_file",
    "evaluate",
    "load_judge",
    "score",
]
