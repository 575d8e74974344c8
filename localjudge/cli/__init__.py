"""The ``localjudge`` command: a thin client of the library, one module per command group.

:mod:`~localjudge.cli.app` is the root group (with ``report`` and ``doctor``); ``eval``,
``bench``, ``models``, ``cache`` and ``diff`` live in modules of their own. What they share (exit
codes, the typed judge/Ray/run options of ``eval`` and ``bench``, the progress bar) is in
:mod:`~localjudge.cli.common`; option values from a config file and the environment in
:mod:`~localjudge.cli.config`. The entry point
(``localjudge = "localjudge.cli:main"``) is :func:`main`.

May import anything below it (run, judge, data, metrics, stats, cluster, doctor); nothing imports
the CLI. Heavy packages load only inside a command, so ``localjudge --help`` stays light.
"""

from localjudge.cli.app import main

__all__ = ["main"]
