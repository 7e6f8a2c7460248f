"""Imports every command module so that it registers on the shared app.

Add one import line per new command module (keep the list sorted).
"""

from __future__ import annotations
