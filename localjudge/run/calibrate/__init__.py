"""``localjudge calibrate``: a judge's cut-offs fitted on a labelled file, kept only under a rule.

Owns :mod:`~localjudge.run.calibrate.calibration` (``calibrate``, ``check_labels``,
``fit_cutoffs``: judging the labelled items and the held-out checks),
:mod:`~localjudge.run.calibrate.check` (what a labelled file can be fitted on, and the groups
of its held-out split),
:mod:`~localjudge.run.calibrate.combine` (a kind's readings combined by a fitted model),
:mod:`~localjudge.run.calibrate.table` (the tables ``calibrate`` prints) and
:mod:`~localjudge.run.calibrate.contrast_items` (with the package data
``contrast_items.jsonl``: the clear-cut items every fit must keep right).

Offers ``calibrate``, ``check_labels``, ``fit_cutoffs``, the printed tables and the contrast
items' check (imported from those modules; this file imports nothing). Imports the top of
:mod:`localjudge.run` and :mod:`localjudge.run.evaluate`; never :mod:`localjudge.run.bench` or
the report.
"""
