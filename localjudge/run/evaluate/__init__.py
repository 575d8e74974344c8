"""Running an evaluation: records and metrics in, judged results out.

Owns :mod:`~localjudge.run.evaluate.evaluation` (``evaluate`` and ``score``: the loop, every
judge call, the cut-offs in use), :mod:`~localjudge.run.evaluate.file_run` (``open_run`` and
``eval_file``: a data file to ``results.jsonl`` and ``summary.json``, its files opened and its
output locked once), :mod:`~localjudge.run.evaluate.phases` (that run's phases, in order),
:mod:`~localjudge.run.evaluate.plan` (what those phases share: the open files, the options and
the cut-offs fixed once),
:mod:`~localjudge.run.evaluate.labelled_pass` (the labelled items of ``eval --labels``:
``labelled.jsonl``, PPI and the isotonic map), :mod:`~localjudge.run.evaluate.grouping` (a
chunk's calls in one batch, those that share an opening together) and
:mod:`~localjudge.run.evaluate.truncation` (the ``--truncate`` policy).

Offers ``evaluate``, ``score``, ``open_run`` and ``eval_file`` from those
modules (imported from them: this file imports nothing, so that a room that needs the runner
loads no more than it uses). Imports the top of :mod:`localjudge.run` only.
"""
