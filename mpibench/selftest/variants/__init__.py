"""The self-test's known-bad variants (job layer): each plants one deliberate mistake in the
strategies, the worker loop, the recovery or the records, and the checker must catch it.
The catalogue (:mod:`.catalogue`) lists them; :mod:`.build` turns a name into the run's parts."""
