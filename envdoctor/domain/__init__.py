"""Pure domain knowledge, one implementation per concept: versions, torch variants, GPU arches, PCI keys, GPU names
and labels, the phases and statistics of a watch recording.

Nothing here imports probes, checks, report or facts; every other layer may import it. The payload
folder (`_payload/`) runs in another interpreter and keeps stdlib copies (the PCI key, PEP 503 names), held to these
by tests/unit/probes/test_payload_pins.py.
"""
