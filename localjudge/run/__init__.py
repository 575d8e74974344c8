"""A run and its files: judge and metrics assembled from settings (:mod:`~localjudge.run.settings`),
the runner (:mod:`~localjudge.run.evaluation`: ``evaluate``, ``score``, ``eval_file``), what it
returns (:mod:`~localjudge.run.outcome`), the versioned results files and summary
(:mod:`~localjudge.run.results`), JUnit XML, the HTML report with its ``templates/``, the diff of
two runs, and the bench of judges against human labels with its peak-memory probe.

May import: judge, data, metrics, stats and the foundation modules; never cli, cluster or
integrations (the CLI passes a Ray judge in, the runner does not look for one).
"""
