"""The decisions core: how a judge's answer becomes a verdict, and how the cut-offs that make
it are fitted, kept and stored. The product's verdicts (``eval``), ``localjudge calibrate`` and
the bundled judges' build (``fitting/``) all call it; nothing else re-implements any of it.

- :mod:`~localjudge.decisions.kinds`: the kinds of decision, their neutral cut-offs, the
  readings;
- :mod:`~localjudge.decisions.cutoffs`: cut-offs, combinations of readings, their provenance;
- :mod:`~localjudge.decisions.decide`: an answer's soft value, readings and hard value, and
  whether it is a close call (:data:`~localjudge.decisions.decide.CLOSE_CALL_MARGINS`): the
  one way from probabilities to a soft value
  (:func:`~localjudge.decisions.decide.soft_value`) and from a soft value to a hard one
  (:func:`~localjudge.decisions.decide.hard_value`), put together per decision by
  :func:`~localjudge.decisions.decide.ruling`;
- :mod:`~localjudge.decisions.fit` and :mod:`~localjudge.decisions.combination_fit`: fitting
  cut-offs and combinations on human labels, and measuring them;
- :mod:`~localjudge.decisions.rule`: the storing rule (does a fit replace what is in use);
- :mod:`~localjudge.decisions.role_targets` and :mod:`~localjudge.decisions.contrast_check`:
  the clear cases a fit must keep right (the build's targets over XQuAD's lists, by each
  passage's role; the decisions on the bundled contrast items that ``calibrate`` judges);
- :mod:`~localjudge.decisions.shipped`: what the bundled judges ship (``cutoffs.json``, the
  typed model ``fitting/build.py`` writes) and
  :mod:`~localjudge.decisions.cutoff_registry`: cut-offs in the registries (the package's, read; the
  user's, read and written).

Words: the *baseline* is an item's call with no passage (its QUESTION reading is what the
passages' readings are measured against); the *neutral* cut-offs are those of the larger
probability, which a kind without fitted cut-offs takes.

May import: the foundation, :mod:`localjudge.judge`'s top and what
:mod:`localjudge.judge.models` offers, :mod:`localjudge.metrics` (what a decision is asked
with) and :mod:`localjudge.stats` (kappa, the bootstrap); nothing from run, cli or the extras.
"""

from localjudge.decisions.contrast_check import ContrastCheck, Decided, lost, verdict_word
from localjudge.decisions.cutoff_registry import (
    builtin_cutoffs,
    cutoffs_of,
    entry_json,
    fitted_protocols,
    judge_cutoffs,
    reset_cutoffs,
    shipped,
    shipped_judge,
    shipped_protocol,
    store_cutoffs,
    user_cutoffs,
    user_protocol,
)
from localjudge.decisions.cutoffs import NO_CUTOFFS, Combination, Cutoffs, Provenance
from localjudge.decisions.decide import (
    CLOSE_CALL_MARGINS,
    LOG_ODDS_CLIP,
    Ruling,
    close_call,
    close_call_margin,
    combined_probs,
    cutoff_distance,
    decide,
    decide_all,
    hard_value,
    plain_probs,
    readings,
    ruling,
    soft_value,
)
from localjudge.decisions.kinds import (
    COMBINED_READINGS,
    KINDS,
    READINGS,
    KindSpec,
    kinds_of,
    neutral,
)
from localjudge.decisions.role_targets import TARGETS, Target, groups_met, target_shares
from localjudge.decisions.rule import (
    CONDITIONS,
    Difference,
    HeldOutCheck,
    Verdict,
    held_out_check,
    ship_rule,
)
from localjudge.decisions.shipped import Shipped, ShippedJudge, ShippedKind, read_shipped

__all__ = [
    "CLOSE_CALL_MARGINS",
    "COMBINED_READINGS",
    "CONDITIONS",
    "KINDS",
    "LOG_ODDS_CLIP",
    "NO_CUTOFFS",
    "READINGS",
    "TARGETS",
    "Combination",
    "ContrastCheck",
    "Cutoffs",
    "Decided",
    "Difference",
    "HeldOutCheck",
    "KindSpec",
    "Provenance",
    "Ruling",
    "Shipped",
    "ShippedJudge",
    "ShippedKind",
    "Target",
    "Verdict",
    "builtin_cutoffs",
    "close_call",
    "close_call_margin",
    "combined_probs",
    "cutoff_distance",
    "cutoffs_of",
    "decide",
    "decide_all",
    "entry_json",
    "fitted_protocols",
    "groups_met",
    "hard_value",
    "held_out_check",
    "judge_cutoffs",
    "kinds_of",
    "lost",
    "neutral",
    "plain_probs",
    "read_shipped",
    "readings",
    "reset_cutoffs",
    "ruling",
    "ship_rule",
    "shipped",
    "shipped_judge",
    "shipped_protocol",
    "soft_value",
    "store_cutoffs",
    "target_shares",
    "user_cutoffs",
    "user_protocol",
    "verdict_word",
]
