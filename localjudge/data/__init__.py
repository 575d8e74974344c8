"""The input side: the evaluation item and the readers that turn files into records.

:mod:`~localjudge.data.items` (field names, Mastra aliases, per-metric checks);
:mod:`~localjudge.data.dataset` (formats, :func:`~localjudge.data.dataset.read_records`, JSONL
and JSON), :mod:`~localjudge.data.tables` (CSV, Parquet, Hugging Face folders), both over
:mod:`~localjudge.data.records` (the record, the size limit, bounded reading); and
:mod:`~localjudge.data.datafile` (a run's data file, opened once: every pass over its records
and its sha256 read one handle).

May import: :mod:`localjudge.errors` and :mod:`localjudge.canonical`; nothing from the judge,
the metrics or above.
"""
