"""Readers: each recognises one kind of pasted text and writes what it saw into the accumulator."""
