"""minikafka's benchmarks (ARCHITECTURE.md, "Performance"): ``python -m bench`` or ``make bench``.

Each benchmark module measures one mechanism against a ceiling in the same run and
returns a :class:`bench._common.Report`; ``__main__`` prints the reports' tables and
writes each one's JSON (and a chart) to ``bench/results/``. Nothing here is a test:
no timing is ever asserted, only measured and written down.
"""
