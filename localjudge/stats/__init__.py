"""Statistics of scores and labels: the one bootstrap (:mod:`~localjudge.stats.bootstrap`),
judge-human agreement (:mod:`~localjudge.stats.agreement`) and prediction-powered inference
(:mod:`~localjudge.stats.ppi`). Pure functions: no files, no judge calls.

May import: the foundation modules (errors, canonical), numpy/scipy/scikit-learn (lazily), and
:mod:`localjudge.metrics` for a metric's kind of label; nothing from run, cli or the extras.
"""
