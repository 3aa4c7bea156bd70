"""Pure domain knowledge, one implementation per concept: versions, torch variants, GPU arches, PCI keys, GPU names
and labels, the phases and statistics of a watch recording.

Nothing here imports probes, checks, report or facts; every other layer may import it. `_payload.py` and
`_bench_payload.py` run in another interpreter and keep stdlib copies that point back here.
"""
