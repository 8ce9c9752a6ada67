"""The course's exercises, one module per notebook (``nNN_topic.py`` → ids ``"NN.k"``).

Every module here is imported when an exercise is first looked up, so adding a notebook's
exercises is adding a module. Each checker reads recorded facts only (see
:class:`agentnb.teach.Evidence`) and is tested with a correct and a wrong solution in
``tests/teach/``.
"""
