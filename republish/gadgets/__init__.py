"""Test gadgets: tables built from reductions in the papers (hard instances with known optima).

* :mod:`republish.gadgets.three_dm`: the 3-dimensional-matching reduction of the
  l-diversity paper (§4).
"""
