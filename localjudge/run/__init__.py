"""A run and its files.

- :mod:`~localjudge.run.settings`: a judge, its cache and its metrics assembled from settings.
- :mod:`~localjudge.run.evaluation`: the runner (``evaluate``, ``score``: the loop and every
  judge call); :mod:`~localjudge.run.file_run`: ``eval_file``, file to file, with PPI's labelled
  items; :mod:`~localjudge.run.outcome`: what ``evaluate`` returns.
- :mod:`~localjudge.run.results` (file kinds, versions, shapes, rows),
  :mod:`~localjudge.run.summary` (``summary.json``) and :mod:`~localjudge.run.rundir` (the
  output directory's lock and rules);
  :mod:`~localjudge.run.junit`; the HTML report (:mod:`~localjudge.run.report`,
  :mod:`~localjudge.run.report_views`, :mod:`~localjudge.run.report_page`, ``templates/``);
  :mod:`~localjudge.run.diff` of two runs.
- :mod:`~localjudge.run.bench` (judges against human labels, each in a supervised process) with
  :mod:`~localjudge.run.compare` (label checks and agreement) and :mod:`~localjudge.run.memory`.

May import: judge, data, metrics, stats and the foundation modules; never cli, cluster or
integrations (the CLI passes a Ray judge in; the runner does not look for one).
"""
