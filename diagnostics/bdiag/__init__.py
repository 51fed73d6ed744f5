"""Staged checks of the machine a bundle runs on (standard library + torch only)."""

import os

VERSION = "1"
FOLDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the diagnostics/ folder
