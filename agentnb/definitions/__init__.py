"""What workflow graphs and state machines share as definitions, whatever their kind.

Flat machines, statecharts, XState configs and workflow graphs are all documents
(:mod:`~agentnb.definitions.document`: JSON or YAML, read defensively), checked against a
JSON Schema (:mod:`~agentnb.definitions.schema`), then against their own rules, which
report :class:`~agentnb.definitions.findings.Finding` objects worded with the names of
:mod:`~agentnb.definitions.names`. The functions a document names come from a
:data:`~agentnb.definitions.registry.Registry`, never from an import.

This package sits just above ``errors`` and ``_json`` and knows nothing about any one kind
of definition: ``agentnb.fsm`` and ``agentnb.graph`` both build on it.
"""
