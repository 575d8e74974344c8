"""``localjudge bench``: judges run against human labels and compared with them.

Owns :mod:`~localjudge.run.bench.runner` (``bench_file``: each judge's eval run in a supervised
process, then ``bench.json`` and ``bench_items.jsonl``), :mod:`~localjudge.run.bench.compare`
(agreement of a judge with the labels and of judges with each other, the per-item rows) and
:mod:`~localjudge.run.bench.memory` (a process's peak resident memory).

Offers ``bench_file`` and the comparisons of :mod:`~localjudge.run.bench.compare` (imported
from those modules; this file imports nothing). Imports the top of :mod:`localjudge.run` and
:mod:`localjudge.run.evaluate`; never :mod:`localjudge.run.calibrate` or the report.
"""
