"""The exit statuses every command shares (``--help`` states them).

0: every invariant held (or every measured reduction was right); 1: a violation, a
wrong reduction, or a run that could not go on; 2: bad usage or input; 3: could not
run or cannot judge (a planned phase never finished), never a pass or a fail;
4: partial: everything that ran passed, but some planned cases were not run because the
launch could not support them (each named with what it needs).
"""
EXIT_OK, EXIT_VIOLATION, EXIT_USAGE, EXIT_COULD_NOT_RUN, EXIT_PARTIAL = 0, 1, 2, 3, 4
