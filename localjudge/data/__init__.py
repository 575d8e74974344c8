"""The input side: the evaluation record (:mod:`~localjudge.data.items`) and the readers that
turn files and datasets into records (:mod:`~localjudge.data.dataset`: JSONL, JSON, CSV,
Parquet, Hugging Face).

May import: :mod:`localjudge.errors` and :mod:`localjudge.canonical`; nothing from the judge,
the metrics or above.
"""
