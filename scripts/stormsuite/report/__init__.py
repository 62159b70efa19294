"""What the analysis says, for people: storm compare's table, storm
report's 0-day and mmtests styles, storm show, the plots.
"""
