"""The input side: the evaluation item and the readers that turn files into records.

:mod:`~localjudge.data.item` (the evaluation item: field names, Mastra aliases, per-metric
checks); :mod:`~localjudge.data.readers` (reading a file of any format:
:func:`~localjudge.data.readers.read_records`, the formats, JSONL and JSON),
:mod:`~localjudge.data.tables` (CSV, Parquet, Hugging Face folders), both over
:mod:`~localjudge.data.raw_records` (a record as read, the size limit, bounded reading); and
:mod:`~localjudge.data.open_once` (a run's data file, opened once: every pass over its records
and its sha256 read one handle).

May import: :mod:`localjudge.errors` and :mod:`localjudge.canonical`; nothing from the judge,
the metrics or above.
"""
