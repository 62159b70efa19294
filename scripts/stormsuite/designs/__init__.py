"""The experiments: matrix, ab and bisect (and the box's bisect), each a
plan of boots on a machine (machines), measured and then judged
(analysis) and reported (report). The top layer.
"""
