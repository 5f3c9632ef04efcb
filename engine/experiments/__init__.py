"""Experiments, the pure part: a workflow version run over a dataset's items, each item's
output scored by the experiment's scorers, the scores aggregated with bootstrap intervals
and compared item by item between experiments. No Django: the apps gather the records and
store the results; see docs/experiments-scoring.md.
"""
