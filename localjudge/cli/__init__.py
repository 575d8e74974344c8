"""The ``localjudge`` command: a thin client of the library, one module per command group.

:mod:`~localjudge.cli.app` is the root group (with ``report`` and ``doctor``); ``eval``,
``bench``, ``calibrate``, ``models``, ``cache`` and ``diff`` live in modules of their own. What
they share has a module per responsibility: exit codes and the mapping of errors to them
(:mod:`~localjudge.cli.exits`), the typed judge and run options (:mod:`~localjudge.cli.options`),
the Ray options (:mod:`~localjudge.cli.ray_options`), the progress bar
(:mod:`~localjudge.cli.progress`), the HTML report (:mod:`~localjudge.cli.html_out`); option
values from a config file and the environment are in :mod:`~localjudge.cli.config`. The entry point
(``localjudge = "localjudge.cli:main"``) is :func:`main`.

May import anything below it (run, judge, data, metrics, stats, cluster, doctor); nothing imports
the CLI. Heavy packages load only inside a command, so ``localjudge --help`` stays light.
"""

from localjudge.cli.app import main

__all__ = ["main"]
