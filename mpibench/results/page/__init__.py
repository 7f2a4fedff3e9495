"""The report page, one module per part: verdict banner, matrix, scenario charts, sweep,
benchmarks, findings. Each part takes the files read by :mod:`mpibench.results.inputs`
and returns an HTML fragment."""
