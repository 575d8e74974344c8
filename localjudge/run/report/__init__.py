"""What is made of finished run files: the HTML report, JUnit XML, the diff of two runs.

Owns :mod:`~localjudge.run.report.render` (``render_report``: the entry points of every HTML
report), :mod:`~localjudge.run.report.page` (the Jinja environment over ``templates/``, the
inlined assets, the offline policy), :mod:`~localjudge.run.report.views` (the views of bench runs
and diffs), :mod:`~localjudge.run.report.junit` (``eval --junit``) and
:mod:`~localjudge.run.report.diff` (``localjudge diff``) with its console view,
:mod:`~localjudge.run.report.diff_console`. Everything here reads the versioned run files, never
runner internals, so an old run can be re-reported.

Offers ``render_report``, ``write_junit`` and ``diff_runs`` (imported from those modules; this
file imports nothing). Imports the top of :mod:`localjudge.run` only.
"""
