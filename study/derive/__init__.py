"""Derive: the only place where arithmetic over recorded rows happens (ledgers, models, leave-one-out,
counted vs compiled, twin pairs); it writes derived tables into the run directory."""
