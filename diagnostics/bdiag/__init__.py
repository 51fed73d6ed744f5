"""Staged checks of the machine a bundle runs on (standard library + torch only)."""

import os

VERSION = "2"  # of the report's shape: 2 added "order" and each stage's "figures"
FOLDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the diagnostics/ folder
