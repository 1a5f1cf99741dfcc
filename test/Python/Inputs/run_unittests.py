"""Runs the unit tests of a folder (unittest discover) with the report on
stdout. libattngen writes its own lines (the progress of a slow compile,
ATTNGEN_LOG) to stderr, so they can never land inside the report that
FileCheck reads, however slow the machine is.

    python3 run_unittests.py FOLDER
"""
import sys
import unittest

unittest.main(module=None, argv=["unittest", "discover", "-s", sys.argv[1]],
              testRunner=unittest.TextTestRunner(stream=sys.stdout, verbosity=2))
