"""Other runtimes' graphs in agentnb's panels.

:mod:`agentnb.interop.langgraph` presents a compiled LangGraph graph and one of its
threads as a run the panels show and drive (``pip install "agentnb[langgraph]"``).
Nothing here is imported by ``import agentnb``.
"""
