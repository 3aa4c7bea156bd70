"""envdoctor: will this GPU machine run your deep-learning stack, and at the speed you pay for?"""

__version__ = "0.1.0"
