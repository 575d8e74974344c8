"""A run and its files, with one room per thing done with runs.

At the top, the run's files and what every room may use:

- :mod:`~localjudge.run.settings`: a judge, its cache and its metrics assembled from settings;
- :mod:`~localjudge.run.options`: the typed, frozen options of a run (``EvalOptions``,
  ``BenchOptions``, ``ScoringOptions``), built once and passed whole;
- :mod:`~localjudge.run.results` (file kinds, versions, shapes, rows),
  :mod:`~localjudge.run.summary` (``summary.json``), :mod:`~localjudge.run.rundir` (the output
  directory's lock and rules) and :mod:`~localjudge.run.outcome` (what ``evaluate`` returns);
- :mod:`~localjudge.run.labels`: human labels checked, and which metrics they apply to.

Below them, one subpackage per responsibility:

- :mod:`localjudge.run.evaluate`: the runner (``evaluate``, ``score``, ``eval_file``, the
  labelled pass of ``eval --labels``);
- :mod:`localjudge.run.report`: what is made of finished run files (the HTML report, JUnit XML,
  the diff of two runs);
- :mod:`localjudge.run.bench`: judges against human labels, each in a supervised process;
- :mod:`localjudge.run.calibrate`: cut-offs fitted on labels, and the obvious items every fit
  must keep right.

Arrows point down (``tests/unit/test_run_rooms.py`` checks them): the top imports no room;
``evaluate`` and ``report`` import the top only; ``bench`` and ``calibrate`` import the top and
``evaluate``, never each other or ``report``.

May import: judge, data, metrics, stats and the foundation modules; never cli, cluster or
integrations (the CLI passes a Ray judge in; the runner does not look for one).
"""
